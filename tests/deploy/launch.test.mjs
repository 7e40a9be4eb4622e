// The rendered manifests, run: for each overlay, the migration Job's container and then each
// Deployment's, started as the kubelet would start them (the binary the image runs, with
// exactly the args and environment the rendered pod gets, as its user, the secret mounted) against
// the test database. Readiness and liveness answer as the probes ask them, /metrics serves, and
// SIGTERM drains within the pod's grace period. Run by ctest (deploy_launch_test), which sets
// GIFTWALL_SERVER_BIN; GIFTWALL_TEST_MYSQL_URL comes from scripts/test.
//
// What is changed, and only that: the database's host, port and name (the test's), and the
// ports listened on (free ones, so that tests may run side by side).
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { checkHealth, stringField, unaryCall, varintField } from "./lib/grpc.mjs";
import { makePki } from "./lib/pki.mjs";
import { containerEnvironment, find, generatedConfigMap, overlayNames, render, repoRoot } from "./lib/render.mjs";
import { portOf } from "./lib/values.mjs";

const serverBin = process.env.GIFTWALL_SERVER_BIN;
const testDatabase = process.env.GIFTWALL_TEST_MYSQL_URL;
assert.ok(serverBin, "GIFTWALL_SERVER_BIN: the giftwall-server to run (ctest sets it)");
assert.ok(testDatabase, "GIFTWALL_TEST_MYSQL_URL is not set: run the tests with scripts/test");
const testDatabaseCa = process.env.GIFTWALL_TEST_MYSQL_CA;
assert.ok(testDatabaseCa, "GIFTWALL_TEST_MYSQL_CA is not set: run the tests with scripts/test");
const testServer = new URL(testDatabase);

// As root, the pods' processes run as the user and groups their securityContext names.
const asRoot = process.getuid() === 0;

function sql(statement) {
  const out = spawnSync(
    "mariadb",
    ["--protocol=tcp", "-h", testServer.hostname, "-P", testServer.port, "-u", decodeURIComponent(testServer.username), "-e", statement],
    { encoding: "utf8", env: { ...process.env, MYSQL_PWD: decodeURIComponent(testServer.password) } },
  );
  assert.equal(out.status, 0, `${statement}\n${out.stderr}`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// The users of docs/OPERATIONS.md's grants, by name: a fresh password each, and its GRANT
// statements with the database `giftwall` replaced by `databaseName`.
function operatorUsers(databaseName) {
  const operations = readFileSync(join(repoRoot, "docs/OPERATIONS.md"), "utf8");
  const users = new Map();
  for (const [statement, user] of operations.matchAll(/^\s*GRANT [A-Z, ]+ ON giftwall\.\* TO '([a-z_]+)'@'%';$/gm)) {
    if (!users.has(user)) users.set(user, { password: randomBytes(12).toString("hex"), grants: [] });
    users.get(user).grants.push(statement.trim().replace("ON giftwall.*", `ON \`${databaseName}\`.*`).replace(/;$/, ""));
  }
  assert.ok(users.size > 0, "docs/OPERATIONS.md grants no database user");
  return users;
}

// `host:port` with the port the test listens on instead.
function withPort(hostPort, ports) {
  const port = portOf(hostPort);
  assert.ok(ports.has(port), `${hostPort}: the container declares no port ${port}`);
  return `${hostPort.slice(0, hostPort.lastIndexOf(":"))}:${ports.get(port)}`;
}

async function waitFor(what, timeoutMs, probe) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    last = await probe();
    if (last === true) return;
    await sleep(200);
  }
  assert.fail(`${what}: still ${last} after ${timeoutMs} ms`);
}

// A container of a rendered pod, run here. `database` is the test's database for this overlay.
class LocalPod {
  // `secrets`: the contents of each secret (and ConfigMap made by the operator) the pod may mount,
  // by name and key.
  constructor(objects, podSpec, container, database, secrets, root) {
    this.podSpec = podSpec;
    this.secrets = secrets;
    this.container = container;
    this.database = database;
    this.root = root;
    this.objects = objects;
    this.ports = new Map();
  }

  async prepare() {
    // Distinct ports: the kernel may hand a port just closed to the next bind(0) again.
    for (const { containerPort } of this.container.ports ?? []) {
      let port;
      do port = await freePort();
      while ([...this.ports.values()].includes(port));
      this.ports.set(containerPort, port);
    }
    // Volumes: a directory per mount with the keys of its secret (the operator's, see
    // `secrets`) or of its rendered ConfigMap as files, owned as fsGroup makes them.
    const mounts = new Map();
    for (const mount of this.container.volumeMounts ?? []) {
      const volume = this.podSpec.volumes.find((v) => v.name === mount.name);
      let files;
      let mode = 0o644;
      if (volume.secret) {
        files = this.secrets[volume.secret.secretName];
        assert.ok(files, `secret ${volume.secret.secretName}: docs/OPERATIONS.md does not say how to make it`);
        mode = volume.secret.defaultMode ?? mode;
      } else {
        assert.ok(volume.configMap, `volume ${mount.name}: only secrets and ConfigMaps are mounted`);
        const name = volume.configMap.name;
        const rendered = this.objects.some((o) => o.kind === "ConfigMap" && o.metadata.name === name);
        files = rendered ? find(this.objects, "ConfigMap", name).data : this.secrets[name];
        assert.ok(files || volume.configMap.optional, `ConfigMap ${name}: neither rendered nor made by the operator`);
        if (!files) continue; // optional, and the operator made none
        mode = volume.configMap.defaultMode ?? mode;
      }
      const dir = join(this.root, mount.name);
      mkdirSync(dir, { recursive: true, mode: 0o755 });
      for (const [key, value] of Object.entries(files)) {
        const file = join(dir, key);
        writeFileSync(file, value, { mode });
        chmodSync(file, mode);
        if (asRoot) chownSync(file, 0, this.podSpec.securityContext.fsGroup ?? 0);
      }
      mounts.set(mount.mountPath, dir);
    }
    const env = containerEnvironment(this.objects, this.container, { "metadata.name": "giftwall-5d8c7b9f4-x2x9q" });
    for (const [name, value] of Object.entries(env)) {
      for (const [mountPath, dir] of mounts) if (value.startsWith(`${mountPath}/`)) env[name] = dir + value.slice(mountPath.length);
    }
    // The primary, and the replica if the overlay reads from one: both are the test's database.
    for (const name of ["GIFTWALL_MYSQL_URL", "GIFTWALL_MYSQL_READ_URL"]) {
      if (env[name] === undefined) continue;
      const url = new URL(env[name]);
      url.host = testServer.host;
      url.pathname = `/${this.database.name}`;
      const ca = url.searchParams.get("ssl-ca");
      for (const [mountPath, dir] of mounts) if (ca?.startsWith(`${mountPath}/`)) url.searchParams.set("ssl-ca", dir + ca.slice(mountPath.length));
      env[name] = url.toString();
    }
    // A container that declares no ports (the migration) listens on none.
    if (this.ports.size > 0) {
      for (const name of ["GIFTWALL_LISTEN", "GIFTWALL_METRICS_LISTEN", "GIFTWALL_HEALTH_LISTEN"]) {
        if (env[name] !== undefined) env[name] = withPort(env[name], this.ports);
      }
    }
    this.env = env;
  }

  command() {
    const args = this.container.args ?? [];
    if (!asRoot) return [serverBin, args];
    const { runAsUser, runAsGroup, fsGroup } = this.podSpec.securityContext;
    const groups = [runAsGroup, fsGroup].filter((g) => g !== undefined).join(",");
    return ["setpriv", [`--reuid=${runAsUser}`, `--regid=${runAsGroup}`, `--groups=${groups}`, serverBin, ...args]];
  }

  // Runs the container to completion: its exit code and output.
  run(timeoutMs) {
    const [program, args] = this.command();
    return spawnSync(program, args, { env: this.env, encoding: "utf8", timeout: timeoutMs });
  }

  start() {
    const [program, args] = this.command();
    this.process = spawn(program, args, { env: this.env, stdio: ["ignore", "ignore", "pipe"] });
    this.stderr = "";
    this.process.stderr.on("data", (chunk) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => this.process.on("exit", (code, signal) => resolve({ code, signal })));
  }

  // A call to the gRPC port, as a caller with `tls` ({ca, cert, key}) when the pod serves TLS.
  call(path, message, tls) {
    return unaryCall(`127.0.0.1:${portOf(this.env.GIFTWALL_LISTEN)}`, path, message, 10_000, this.env.GIFTWALL_TLS_CERT_FILE ? tls : undefined);
  }

  async probe(probe) {
    return checkHealth(`127.0.0.1:${this.ports.get(probe.grpc.port)}`, probe.grpc.service ?? "", probe.timeoutSeconds * 1000);
  }

  stop() {
    if (this.process && this.process.exitCode === null) this.process.kill("SIGKILL");
  }
}

for (const overlay of overlayNames()) {
  describe(`overlay ${overlay}, run`, () => {
    const objects = render(overlay);
    const config = generatedConfigMap(objects, "giftwall").data;
    const database = { name: `gw_deploy_${overlay}_${process.pid}` };
    // The database users docs/OPERATIONS.md has the operator create, with exactly its grants
    // (on the test's database), and a password each.
    const users = operatorUsers(database.name);
    // The secrets docs/OPERATIONS.md has the operator create, and a reader of the overlay's
    // access policy, with a certificate of the name the policy knows it by.
    const policy = JSON.parse(find(objects, "ConfigMap", "giftwall-access").data["access-policy.json"]);
    const reader = policy.callers.find((c) => c.roles.includes("reader") && c.app_codes.includes("*") && c.certificate_names?.length);
    assert.ok(reader, "the access policy has no reader of every app with a certificate name");
    const pki = makePki(reader.certificate_names[0]);
    const servingUser = new URL(config.GIFTWALL_MYSQL_URL).username;
    const migrateUser = new URL(generatedConfigMap(objects, "giftwall-migrate").data.GIFTWALL_MYSQL_URL).username;
    for (const user of [servingUser, migrateUser]) assert.ok(users.has(user), `docs/OPERATIONS.md creates no database user ${user}`);
    const secrets = {
      "giftwall-mysql": { password: `${users.get(servingUser).password}\n` },
      "giftwall-mysql-migrate": { password: `${users.get(migrateUser).password}\n` },
      "giftwall-tls": { "tls.crt": pki.server.cert, "tls.key": pki.server.key, "ca.crt": pki.ca },
      // The database's CA (docs/OPERATIONS.md): scripts/test's MariaDB serves a certificate it
      // signed, for 127.0.0.1.
      "giftwall-mysql-ca": { "ca.crt": readFileSync(testDatabaseCa, "utf8") },
    };
    const root = mkdtempSync(join(tmpdir(), `giftwall-pod-${overlay}-`));
    chmodSync(root, 0o755);
    const pods = [];
    const podOf = (object) => {
      const spec = object.spec.template.spec;
      const pod = new LocalPod(objects, spec, spec.containers.find((c) => c.name === "giftwall"), database, secrets, join(root, object.metadata.name));
      pods.push(pod);
      return pod;
    };

    before(async () => {
      sql(`CREATE DATABASE \`${database.name}\``);
      for (const [user, { password, grants }] of users) {
        sql(`CREATE OR REPLACE USER '${user}'@'%' IDENTIFIED BY '${password}'`);
        for (const grant of grants) sql(grant);
      }
    });
    after(() => {
      for (const pod of pods) pod.stop();
      sql(`DROP DATABASE IF EXISTS \`${database.name}\``);
      for (const user of users.keys()) sql(`DROP USER IF EXISTS '${user}'@'%'`);
      rmSync(root, { recursive: true, force: true });
    });

    test("the migration Job's container migrates the database, as its own user", async () => {
      const job = objects.find((o) => o.kind === "Job");
      const pod = podOf(job);
      await pod.prepare();
      const out = pod.run(Math.min(job.spec.activeDeadlineSeconds, 120) * 1000);
      assert.equal(out.status, 0, out.stderr);
      assert.doesNotMatch(out.stderr, /names no flag/);
      assert.match(out.stderr, /schema at version \d+/);
    });

    for (const deployment of objects.filter((o) => o.kind === "Deployment")) {
      test(`Deployment ${deployment.metadata.name} comes up ready, serves /metrics, and drains on SIGTERM`, async () => {
        const spec = deployment.spec.template.spec;
        const pod = podOf(deployment);
        const { startupProbe, readinessProbe, livenessProbe } = pod.container;
        await pod.prepare();
        pod.start();
        const startup = startupProbe ?? livenessProbe;
        const startupBudgetMs = ((startup.initialDelaySeconds ?? 0) + startup.periodSeconds * (startup.failureThreshold ?? 3)) * 1000;
        const withLog = (error) => {
          error.message += `\nthe server's log:\n${pod.stderr.slice(-4000)}`;
          throw error;
        };
        await waitFor("startup probe", startupBudgetMs, async () => (await pod.probe(startup)) === "SERVING" || (await pod.probe(startup))).catch(withLog);
        await waitFor("readiness probe", 30_000, async () => (await pod.probe(readinessProbe)) === "SERVING" || (await pod.probe(readinessProbe))).catch(withLog);
        assert.equal(await pod.probe(livenessProbe), "SERVING");
        if (asRoot) {
          const status = readFileSync(`/proc/${pod.process.pid}/status`, "utf8");
          assert.match(status, new RegExp(`^Uid:\\t${spec.securityContext.runAsUser}\\t`, "m"), "runs as the pod's user");
        }

        const metricsPort = pod.ports.get(portOf(config.GIFTWALL_METRICS_LISTEN));
        const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
        assert.equal(response.status, 200);
        const metrics = await response.text();
        assert.match(metrics, /^giftwall_build_info\{version="[^"]+"\} 1$/m);
        assert.match(metrics, /^grpc_server_handled_total\{.*grpc_method="GetGiftWall".*\} 0$/m);
        const operations = readFileSync(join(repoRoot, "docs/OPERATIONS.md"), "utf8");
        for (const [, name] of metrics.matchAll(/^# TYPE ((?:giftwall|grpc)_\S+)/gm)) {
          assert.ok(operations.includes(`\`${name}\``), `${name} is served but not in docs/OPERATIONS.md's metrics`);
        }
        assert.doesNotMatch(pod.stderr, /names no flag/);
        // A wall read: the read path (a replica's URL, user and password) works.
        const wall = await pod.call("/giftwall.v1.GiftWallService/GetGiftWall", Buffer.concat([stringField(1, "deploy"), varintField(2, 7)]), { ca: pki.ca, ...pki.caller });
        assert.equal(wall.status, "0", `GetGiftWall: ${wall.status} ${wall.statusMessage ?? ""}\n${pod.stderr}`);

        // SIGTERM: out of the endpoints at once, serving on while they update, gone within the
        // grace period, cleanly.
        const stopped = Date.now();
        pod.process.kill("SIGTERM");
        await waitFor("readiness after SIGTERM", readinessProbe.periodSeconds * 1000, async () => (await pod.probe(readinessProbe)) === "NOT_SERVING" || (await pod.probe(readinessProbe)));
        assert.equal(await pod.probe(livenessProbe), "SERVING", "still serving during the drain delay");
        const exit = await Promise.race([pod.exited, sleep(spec.terminationGracePeriodSeconds * 1000, "killed", { ref: false })]);
        assert.deepEqual(exit, { code: 0, signal: null }, `${pod.stderr}`);
        assert.ok(Date.now() - stopped < spec.terminationGracePeriodSeconds * 1000);
      });
    }
  });
}
