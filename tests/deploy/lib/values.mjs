// The values of the server's flags as the manifests spell them.

// Seconds in a duration flag's value, as absl parses it: "5s", "1m30s", "500ms", "0".
export function durationSeconds(text) {
  if (text === "0") return 0;
  const units = { h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6, ns: 1e-9 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(h|ms|us|ns|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== text) throw new Error(`not a duration: "${text}"`);
  return parts.reduce((sum, [, number, unit]) => sum + Number(number) * units[unit], 0);
}

// The port of a "host:port" flag value.
export function portOf(hostPort) {
  const port = Number(hostPort.slice(hostPort.lastIndexOf(":") + 1));
  if (!Number.isInteger(port) || port <= 0) throw new Error(`no port in "${hostPort}"`);
  return port;
}
