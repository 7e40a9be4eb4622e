// Certificates made with the openssl command, as cert-manager would issue them: one CA, the
// server's certificate (for localhost and 127.0.0.1) and a caller's, both signed by it.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

function openssl(args) {
  const out = spawnSync("openssl", args, { encoding: "utf8" });
  if (out.error) throw new Error(`openssl: ${out.error.message}`);
  if (out.status !== 0) throw new Error(`openssl ${args[0]} failed:\n${out.stderr}`);
}

const newKey = (file) => ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", file];

// {ca, server: {cert, key}, caller: {cert, key}}: PEM texts. The caller's certificate carries
// `callerName` (a URI SAN if it has a scheme, else a DNS one).
export function makePki(callerName) {
  const dir = mkdtempSync(join(tmpdir(), "giftwall-pki-"));
  try {
    const file = (name) => join(dir, name);
    openssl(["req", "-x509", ...newKey(file("ca.key")), "-out", file("ca.crt"), "-subj", "/CN=giftwall-test-ca", "-days", "2"]);
    const issue = (name, serial, san) => {
      writeFileSync(file("ext"), `subjectAltName=${san}\nextendedKeyUsage=serverAuth,clientAuth\n`);
      openssl(["req", ...newKey(file(`${name}.key`)), "-out", file(`${name}.csr`), "-subj", `/CN=${name}`]);
      openssl(["x509", "-req", "-in", file(`${name}.csr`), "-CA", file("ca.crt"), "-CAkey", file("ca.key"), "-set_serial", String(serial), "-days", "2", "-extfile", file("ext"), "-out", file(`${name}.crt`)]);
      return { cert: readFileSync(file(`${name}.crt`), "utf8"), key: readFileSync(file(`${name}.key`), "utf8") };
    };
    const callerSan = callerName.includes("://") ? `URI:${callerName}` : `DNS:${callerName}`;
    return {
      ca: readFileSync(file("ca.crt"), "utf8"),
      server: issue("giftwall", 1, "DNS:localhost,IP:127.0.0.1"),
      caller: issue("caller", 2, callerSan),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
