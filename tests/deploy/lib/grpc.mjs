// Unary gRPC calls over HTTP/2, with the messages encoded by hand: no gRPC library, so the checks
// depend on nothing but the wire format (the kubelet's gRPC probe speaks it the same way).
import http2 from "node:http2";

const statusNames = ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"];

// Protocol buffers' encodings of a string field and of a varint field (values below 2^31).
export function stringField(number, value) {
  const bytes = Buffer.from(value);
  return bytes.length === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from([(number << 3) | 2, bytes.length]), bytes]);
}

export function varintField(number, value) {
  const bytes = [(number << 3) | 0];
  for (let v = value; ; v >>>= 7) {
    if (v < 0x80) {
      bytes.push(v);
      break;
    }
    bytes.push((v & 0x7f) | 0x80);
  }
  return Buffer.from(bytes);
}

// Calls /service/method at host:port with `message` (encoded); resolves to {status, message}:
// the grpc-status ("0" is OK) and the response message, or {status: "unreachable: ..."} etc.
// With `tls` ({ca, cert, key}: PEM), over TLS to a server whose certificate names localhost,
// presenting cert. Never throws.
export function unaryCall(address, path, message, timeoutMs = 2000, tls = undefined) {
  return new Promise((resolve) => {
    const client = tls
      ? http2.connect(`https://${address}`, { ca: tls.ca, cert: tls.cert, key: tls.key, servername: "localhost" })
      : http2.connect(`http://${address}`);
    const done = (answer) => {
      client.destroy();
      resolve(answer);
    };
    client.on("error", (error) => done({ status: `unreachable: ${error.code ?? error.message}` }));
    client.setTimeout(timeoutMs, () => done({ status: "timed out" }));
    const call = client.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers" });
    const chunks = [];
    let status;
    let statusMessage = "";
    // The status comes in the trailers, or in the headers of a response that has none.
    const readStatus = (fields) => {
      status = fields["grpc-status"] ?? status;
      statusMessage = decodeURIComponent(fields["grpc-message"] ?? statusMessage);
    };
    call.on("response", readStatus);
    call.on("trailers", readStatus);
    call.on("data", (chunk) => chunks.push(chunk));
    call.on("error", (error) => done({ status: `call failed: ${error.code ?? error.message}` }));
    // A length-prefixed message: a 0 (not compressed), the length, the bytes.
    call.on("end", () => done({ status, statusMessage, message: Buffer.concat(chunks).subarray(5) }));
    const header = Buffer.alloc(5);
    header.writeUInt32BE(message.length, 1);
    call.end(Buffer.concat([header, message]));
  });
}

// grpc.health.v1.Health/Check of `service`: "SERVING", "NOT_SERVING", ..., or why there is no
// status ("unreachable: ...", "grpc-status 5").
export async function checkHealth(address, service, timeoutMs = 2000) {
  const answer = await unaryCall(address, "/grpc.health.v1.Health/Check", stringField(1, service), timeoutMs);
  if (answer.status !== "0") return /^\d+$/.test(answer.status) ? `grpc-status ${answer.status}` : String(answer.status);
  // HealthCheckResponse{status}: field 1, a varint; absent when 0 (UNKNOWN).
  const { message } = answer;
  return statusNames[message[0] === 0x08 ? message[1] : 0] ?? `status ${message[1]}`;
}
