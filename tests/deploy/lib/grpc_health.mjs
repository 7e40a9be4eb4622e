// grpc.health.v1.Health/Check over HTTP/2, as the kubelet's gRPC probe sends it: no gRPC
// library, so the check depends on nothing but the wire format.
import http2 from "node:http2";

const statusNames = ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"];

// HealthCheckRequest{service}, framed: a 0 (not compressed), the length, the message.
function requestFrame(service) {
  const name = Buffer.from(service);
  const message = name.length === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from([0x0a, name.length]), name]);
  const header = Buffer.alloc(5);
  header.writeUInt32BE(message.length, 1);
  return Buffer.concat([header, message]);
}

// The status of `service` at host:port ("SERVING", "NOT_SERVING", ...), or why there is none
// ("unreachable: ...", "grpc-status 5"); never throws.
export function checkHealth(address, service, timeoutMs = 2000) {
  return new Promise((resolve) => {
    const client = http2.connect(`http://${address}`);
    const done = (answer) => {
      client.destroy();
      resolve(answer);
    };
    client.on("error", (error) => done(`unreachable: ${error.code ?? error.message}`));
    client.setTimeout(timeoutMs, () => done("timed out"));
    const call = client.request({
      ":method": "POST",
      ":path": "/grpc.health.v1.Health/Check",
      "content-type": "application/grpc",
      te: "trailers",
    });
    const chunks = [];
    let grpcStatus;
    call.on("response", (headers) => (grpcStatus = headers["grpc-status"]));
    call.on("trailers", (trailers) => (grpcStatus = trailers["grpc-status"] ?? grpcStatus));
    call.on("data", (chunk) => chunks.push(chunk));
    call.on("error", (error) => done(`call failed: ${error.code ?? error.message}`));
    call.on("end", () => {
      if (grpcStatus !== "0") return done(`grpc-status ${grpcStatus}`);
      // HealthCheckResponse{status}: field 1, a varint; absent when 0 (UNKNOWN).
      const message = Buffer.concat(chunks).subarray(5);
      done(statusNames[message[0] === 0x08 ? message[1] : 0] ?? `status ${message[1]}`);
    });
    call.end(requestFrame(service));
  });
}
