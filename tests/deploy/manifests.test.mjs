// deploy/k8s, checked without a cluster: every overlay renders, every object matches its schema,
// the pods are admitted by Pod Security "restricted", and the objects fit together the way the
// service needs (probes on the ports it listens on, selectors that select, a Job per release,
// alerts that fire when they should). Run by ctest (deploy_manifests_test).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { stringify } from "yaml";
import {
  containerEnvironment,
  find,
  generatedConfigMap,
  matches,
  overlayNames,
  podTemplates,
  kubectlUnavailable,
  monitoringSettings,
  render,
  renderBase,
  renderNamespace,
  renderWithKubectl,
  repoRoot,
} from "./lib/render.mjs";
import { validateObject } from "./lib/schemas.mjs";
import { durationSeconds, portOf } from "./lib/values.mjs";


// Pod Security Standards, "restricted" profile: the volume types it allows.
const restrictedVolumeTypes = new Set([
  "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret",
]);

function allContainers(spec) {
  return [...(spec.initContainers ?? []), ...(spec.containers ?? []), ...(spec.ephemeralContainers ?? [])];
}

// What the restricted profile (and this service: no token, nothing written) forbids, as
// messages; empty when the pod is admitted.
function restrictedViolations(spec) {
  const problems = [];
  const pod = spec.securityContext ?? {};
  for (const field of ["hostNetwork", "hostPID", "hostIPC"]) if (spec[field]) problems.push(`${field} is set`);
  if (spec.automountServiceAccountToken !== false) problems.push("the service-account token is mounted");
  for (const volume of spec.volumes ?? []) {
    const type = Object.keys(volume).find((key) => key !== "name");
    if (!restrictedVolumeTypes.has(type)) problems.push(`volume ${volume.name} is of type ${type}`);
  }
  if (pod.runAsUser === 0) problems.push("the pod runs as uid 0");
  for (const c of allContainers(spec)) {
    const sc = c.securityContext ?? {};
    const where = `container ${c.name}`;
    if (sc.privileged) problems.push(`${where} is privileged`);
    if (sc.allowPrivilegeEscalation !== false) problems.push(`${where} may escalate privileges`);
    if (!(sc.runAsNonRoot ?? pod.runAsNonRoot)) problems.push(`${where} may run as root`);
    if (sc.runAsUser === 0) problems.push(`${where} runs as uid 0`);
    const seccomp = (sc.seccompProfile ?? pod.seccompProfile)?.type;
    if (seccomp !== "RuntimeDefault" && seccomp !== "Localhost") problems.push(`${where} has seccomp ${seccomp}`);
    if (!sc.capabilities?.drop?.includes("ALL")) problems.push(`${where} does not drop ALL capabilities`);
    for (const added of sc.capabilities?.add ?? []) {
      if (added !== "NET_BIND_SERVICE") problems.push(`${where} adds capability ${added}`);
    }
    if (sc.readOnlyRootFilesystem !== true) problems.push(`${where} may write its root filesystem`);
    for (const port of c.ports ?? []) if (port.hostPort) problems.push(`${where} uses host port ${port.hostPort}`);
  }
  return problems;
}

// The prometheus-operator's objects: a cluster without its CRDs refuses them.
const operatorObjects = (objects) => objects.filter((o) => o.apiVersion.startsWith("monitoring.coreos.com/"));

// GitHub's anchors of docs/OPERATIONS.md: each heading in lower case, without punctuation,
// spaces as hyphens.
function operationsAnchors() {
  return new Set(
    readFileSync(join(repoRoot, "docs/OPERATIONS.md"), "utf8")
      .split("\n")
      .filter((line) => /^#+ /.test(line))
      .map((line) => line.replace(/^#+ /, "").trim().toLowerCase().replace(/[^\w\- ]/g, "").replace(/ /g, "-")),
  );
}

describe("the base", () => {
  const objects = renderBase();
  test("leaves the image and the database to the overlays", () => {
    assert.equal(generatedConfigMap(objects, "giftwall").data.GIFTWALL_MYSQL_URL, undefined);
    const images = podTemplates(objects).flatMap(({ template }) => template.spec.containers.map((c) => c.image));
    assert.deepEqual([...new Set(images)], ["giftwall"]);
  });

  test("applies on a cluster without the prometheus-operator", () => {
    assert.deepEqual(operatorObjects(objects).map((o) => o.kind), []);
  });

  test("holds no Namespace: deleting the service leaves the namespace and its secrets", () => {
    assert.deepEqual(objects.filter((o) => o.kind === "Namespace"), []);
  });
});

for (const overlay of overlayNames()) {
  describe(`overlay ${overlay}`, () => {
    const objects = render(overlay);
    const monitoring = monitoringSettings(overlay);
    const config = generatedConfigMap(objects, "giftwall").data;
    const server = find(objects, "Deployment", "giftwall");
    const serverPod = server.spec.template.spec;
    const serverContainer = serverPod.containers.find((c) => c.name === "giftwall");

    const kubectl = kubectlUnavailable();
    test("kubectl apply -k would apply the same objects", { skip: kubectl || false }, () => {
      assert.deepEqual(renderWithKubectl(overlay), objects);
    });

    test("every object matches its schema", async () => {
      for (const object of objects) await validateObject(object);
    });

    test("every pod is admitted under Pod Security restricted", () => {
      for (const { owner, template } of podTemplates(objects)) {
        assert.deepEqual(restrictedViolations(template.spec), [], owner);
      }
    });

    test("every container has requests, and a memory limit", () => {
      for (const { owner, template } of podTemplates(objects)) {
        for (const c of template.spec.containers) {
          const { requests = {}, limits = {} } = c.resources ?? {};
          assert.ok(requests.cpu && requests.memory && limits.memory, `${owner} ${c.name}: ${JSON.stringify(c.resources)}`);
        }
      }
    });

    test("runs one released image, set by the overlay", () => {
      const images = new Set(podTemplates(objects).flatMap(({ template }) => template.spec.containers.map((c) => c.image)));
      assert.equal(images.size, 1, [...images].join(", "));
      const [image] = images;
      const tag = image.split("/").pop().split(":")[1];
      assert.ok(tag && tag !== "latest", `${image} has no release tag`);
    });

    test("the database (and its replica, if any) is the overlay's, with the secret's password", () => {
      const primary = new URL(config.GIFTWALL_MYSQL_URL);
      for (const url of [primary, ...(config.GIFTWALL_MYSQL_READ_URL ? [new URL(config.GIFTWALL_MYSQL_READ_URL)] : [])]) {
        assert.equal(url.protocol, "mysql:");
        assert.ok(!["localhost", "127.0.0.1", ""].includes(url.hostname), url.hostname);
        assert.equal(url.password, "", "the password comes from the secret file, not the ConfigMap");
        // One secret: the replica is read as the same user, of the same database.
        assert.equal(url.username, primary.username);
        assert.equal(url.pathname, primary.pathname);
      }
      assert.ok(config.GIFTWALL_MYSQL_PASSWORD_FILE.startsWith(serverContainer.volumeMounts[0].mountPath));
    });

    test("every database URL that names a CA finds it on a mounted volume; prod verifies", () => {
      const containers = podTemplates(objects).flatMap(({ template }) => template.spec.containers);
      for (const container of containers) {
        const env = containerEnvironment(objects, container, { "metadata.name": "pod" });
        for (const name of ["GIFTWALL_MYSQL_URL", "GIFTWALL_MYSQL_READ_URL"].filter((n) => env[n])) {
          const url = new URL(env[name]);
          const mode = url.searchParams.get("ssl-mode");
          if (overlay === "prod") assert.equal(mode, "VERIFY_IDENTITY", `${name} in prod`);
          const ca = url.searchParams.get("ssl-ca");
          if (mode === "VERIFY_IDENTITY") assert.ok(ca, `${name}: VERIFY_IDENTITY needs ssl-ca`);
          if (!ca) continue;
          assert.ok(container.volumeMounts.some((m) => ca.startsWith(`${m.mountPath}/`)), `${name}: ${ca} is on no mounted volume`);
        }
      }
    });

    test("gRPC is served over mutual TLS, from the mounted secret", () => {
      const mounts = serverContainer.volumeMounts.map((m) => m.mountPath);
      for (const name of ["GIFTWALL_TLS_CERT_FILE", "GIFTWALL_TLS_KEY_FILE", "GIFTWALL_TLS_CLIENT_CA_FILE"]) {
        assert.ok(config[name], `${name} is not set`);
        assert.ok(mounts.some((path) => config[name].startsWith(`${path}/`)), `${name}: ${config[name]} is on no mounted volume`);
      }
      assert.equal(config.GIFTWALL_PLAINTEXT, undefined);
      assert.notEqual(config.GIFTWALL_TLS_CLIENT_AUTH, "optional");
    });

    test("probes ask the gRPC health service on the plaintext health port", () => {
      const listenPort = portOf(config.GIFTWALL_LISTEN);
      const healthPort = portOf(config.GIFTWALL_HEALTH_LISTEN);
      for (const deployment of objects.filter((o) => o.kind === "Deployment")) {
        const c = deployment.spec.template.spec.containers.find((x) => x.name === "giftwall");
        const where = `Deployment/${deployment.metadata.name}`;
        assert.equal(c.ports.find((p) => p.name === "grpc").containerPort, listenPort, where);
        assert.equal(c.ports.find((p) => p.name === "health").containerPort, healthPort, where);
        assert.equal(c.readinessProbe?.grpc?.service, "readiness", `${where}: readiness`);
        // A database outage makes a pod unready, never restarts it.
        assert.ok(c.livenessProbe?.grpc && !c.livenessProbe.grpc.service, `${where}: liveness`);
        for (const kind of ["startupProbe", "readinessProbe", "livenessProbe"]) {
          const probe = c[kind];
          if (!probe) continue;
          assert.equal(probe.grpc?.port, healthPort, `${where} ${kind}`);
          assert.ok(probe.timeoutSeconds >= 1 && probe.timeoutSeconds <= probe.periodSeconds, `${where} ${kind} timeout`);
        }
      }
    });

    test("pods drain before they are killed", () => {
      const drain = durationSeconds(config.GIFTWALL_DRAIN_DELAY) + durationSeconds(config.GIFTWALL_SHUTDOWN_GRACE);
      assert.ok(drain >= 1, "a drain delay leaves time to leave the endpoints");
      for (const deployment of objects.filter((o) => o.kind === "Deployment")) {
        const grace = deployment.spec.template.spec.terminationGracePeriodSeconds;
        assert.ok(grace >= drain + 5, `${deployment.metadata.name}: ${grace}s < ${drain}s of drain + 5s`);
      }
    });

    test("the autoscaler owns the serving replicas, one of which may be disrupted at a time", () => {
      const hpa = find(objects, "HorizontalPodAutoscaler", "giftwall");
      assert.deepEqual(hpa.spec.scaleTargetRef, { apiVersion: "apps/v1", kind: "Deployment", name: "giftwall" });
      assert.ok(hpa.spec.minReplicas >= 1 && hpa.spec.minReplicas <= hpa.spec.maxReplicas);
      assert.equal(server.spec.replicas, undefined, "a replicas field would undo the autoscaler at each apply");
      const pdb = find(objects, "PodDisruptionBudget", "giftwall");
      assert.ok(matches(pdb.spec.selector.matchLabels, server.spec.template.metadata.labels));
      assert.equal(pdb.spec.maxUnavailable, 1);
      assert.ok(serverPod.topologySpreadConstraints.some((c) => c.topologyKey === "kubernetes.io/hostname"));
    });

    test("each release migrates in a Job of its own, cleaned up after", () => {
      const jobs = objects.filter((o) => o.kind === "Job");
      assert.equal(jobs.length, 1);
      const [job] = jobs;
      const tag = serverContainer.image.split(":").pop();
      assert.equal(job.metadata.name, `giftwall-migrate-${tag}`);
      assert.ok(job.metadata.name.length <= 63, "the name is a pod label value: 63 characters at most");
      assert.match(job.metadata.name, /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
      assert.deepEqual(job.spec.template.spec.containers[0].args, ["migrate"]);
      assert.ok(job.spec.ttlSecondsAfterFinished > 0 && job.spec.activeDeadlineSeconds > 0);
      assert.equal(job.spec.template.spec.restartPolicy, "Never");
    });

    test("the migration runs as a database user of its own, with its own secret", () => {
      const job = objects.find((o) => o.kind === "Job");
      const container = job.spec.template.spec.containers[0];
      const env = containerEnvironment(objects, container, {});
      const migrate = new URL(env.GIFTWALL_MYSQL_URL);
      const serving = new URL(config.GIFTWALL_MYSQL_URL);
      assert.notEqual(migrate.username, serving.username, "the Job connects as the serving user");
      assert.equal(migrate.host, serving.host);
      assert.equal(migrate.pathname, serving.pathname);
      assert.equal(migrate.password, "", "the password comes from the secret file, not the ConfigMap");
      const mount = container.volumeMounts.find((m) => env.GIFTWALL_MYSQL_PASSWORD_FILE.startsWith(`${m.mountPath}/`));
      const secretOf = (spec, name) => spec.volumes.find((v) => v.name === name).secret.secretName;
      assert.equal(secretOf(job.spec.template.spec, mount.name), "giftwall-mysql-migrate");
      for (const deployment of objects.filter((o) => o.kind === "Deployment")) {
        assert.equal(secretOf(deployment.spec.template.spec, mount.name), "giftwall-mysql", deployment.metadata.name);
      }
    });

    test("each Service selects one workload's pods, on ports they have", () => {
      const workloads = podTemplates(objects);
      for (const service of objects.filter((o) => o.kind === "Service")) {
        const selected = workloads.filter(({ template }) => matches(service.spec.selector, template.metadata.labels));
        assert.equal(selected.length, 1, `Service/${service.metadata.name} selects ${selected.map((w) => w.owner)}`);
        const ports = selected[0].template.spec.containers.flatMap((c) => c.ports ?? []);
        for (const port of service.spec.ports) {
          assert.ok(ports.some((p) => p.name === port.targetPort), `Service/${service.metadata.name}: ${port.targetPort}`);
        }
      }
      assert.equal(find(objects, "Service", "giftwall-headless").spec.clusterIP, "None");
      assert.ok(find(objects, "Service", "giftwall").spec.clusterIP === undefined);
    });

    test("Prometheus scrapes every serving and admin pod once", { skip: !monitoring && "no monitoring Component" }, () => {
      const monitor = find(objects, "ServiceMonitor", "giftwall");
      const scraped = objects.filter((o) => o.kind === "Service" && matches(monitor.spec.selector.matchLabels, o.metadata.labels));
      assert.deepEqual(scraped.map((s) => s.metadata.name).sort(), ["giftwall-admin", "giftwall-headless"]);
      for (const service of scraped) {
        for (const endpoint of monitor.spec.endpoints) {
          assert.ok(service.spec.ports.some((p) => p.name === endpoint.port), `${service.metadata.name}: ${endpoint.port}`);
        }
      }
      assert.equal(portOf(config.GIFTWALL_METRICS_LISTEN), serverContainer.ports.find((p) => p.name === "metrics").containerPort);
    });

    test("without the monitoring Component, applies on a cluster without the prometheus-operator", { skip: !!monitoring && "it includes the Component" }, () => {
      assert.deepEqual(operatorObjects(objects).map((o) => o.kind), []);
    });

    test("the operator's default selectors pick the monitor and the rules, and Prometheus's namespace gets in", { skip: !monitoring && "no monitoring Component" }, () => {
      // kube-prometheus-stack selects ServiceMonitors and PrometheusRules by its release label.
      for (const object of operatorObjects(objects)) {
        assert.equal(object.metadata.labels.release, monitoring.release, `${object.kind}/${object.metadata.name}`);
      }
      assert.ok(monitoring.release && monitoring.namespace, "the settings name a release and a namespace");
      const metrics = find(objects, "NetworkPolicy", "giftwall-metrics");
      assert.deepEqual(metrics.spec.ingress.map((rule) => rule.from), [
        [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": monitoring.namespace } } }],
      ]);
      assert.equal(JSON.stringify(objects).includes("PROMETHEUS_NAMESPACE"), false);
      assert.equal(JSON.stringify(objects).includes("RELEASE"), false);
    });

    test("network policies shut every pod but to its callers, operators and Prometheus", () => {
      const policies = objects.filter((o) => o.kind === "NetworkPolicy");
      const deny = policies.find((p) => !p.spec.ingress);
      assert.ok(deny, "a default-deny policy");
      const selects = (selector, labels) =>
        matches(selector.matchLabels ?? {}, labels) &&
        (selector.matchExpressions ?? []).every((e) => e.operator === "In" && e.values.includes(labels[e.key]));
      const allowedFrom = (labels) =>
        policies
          .filter((p) => p.spec.ingress && selects(p.spec.podSelector, labels))
          .flatMap((p) => p.spec.ingress.flatMap((rule) => rule.ports.map((port) => ({ port: port.port, from: rule.from }))));
      for (const { owner, template } of podTemplates(objects)) {
        assert.ok(matches(deny.spec.podSelector.matchLabels, template.metadata.labels), `${owner} not under the default deny`);
        const rules = allowedFrom(template.metadata.labels);
        const portNames = template.spec.containers.flatMap((c) => (c.ports ?? []).map((p) => p.name));
        for (const { port } of rules) assert.ok(portNames.includes(port), `${owner}: no port ${port}`);
        const component = template.metadata.labels["app.kubernetes.io/component"];
        const expected = { server: "giftwall/caller", admin: "giftwall/operator" }[component];
        if (!expected) {
          assert.deepEqual(rules, [], `${owner} takes no connections`);
          continue;
        }
        const grpc = rules.filter((r) => r.port === "grpc").flatMap((r) => r.from);
        assert.deepEqual(grpc, [{ namespaceSelector: {}, podSelector: { matchLabels: { [expected]: "true" } } }], owner);
        // Prometheus's way in comes with the monitoring Component, from its namespace only.
        const metrics = rules.filter((r) => r.port === "metrics").flatMap((r) => r.from);
        assert.equal(metrics.length, monitoring ? 1 : 0, owner);
        if (monitoring) {
          assert.equal(metrics[0].namespaceSelector.matchLabels["kubernetes.io/metadata.name"], monitoring.namespace, owner);
          assert.equal(metrics[0].podSelector, undefined, owner);
        }
      }
    });

    test("the alerts parse, and fire when they should (promtool)", { skip: !monitoring && "no monitoring Component" }, () => {
      const rule = find(objects, "PrometheusRule", "giftwall");
      const dir = mkdtempSync(join(tmpdir(), "giftwall-alerts-"));
      try {
        writeFileSync(join(dir, "giftwall-rules.yaml"), stringify({ groups: rule.spec.groups }));
        // The tests name the runbooks by the overlay's base URL.
        const tests = readFileSync(join(repoRoot, "tests/deploy/alerts.test.yaml"), "utf8");
        writeFileSync(join(dir, "alerts.test.yaml"), tests.replaceAll("RUNBOOKS", monitoring.runbook_base_url));
        for (const args of [["check", "rules", "giftwall-rules.yaml"], ["test", "rules", "alerts.test.yaml"]]) {
          const out = spawnSync("promtool", args, { cwd: dir, encoding: "utf8" });
          assert.equal(out.status, 0, `promtool ${args.join(" ")}:\n${out.stdout}${out.stderr}`);
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    test("every alert is critical or warning and links to its section of docs/OPERATIONS.md", { skip: !monitoring && "no monitoring Component" }, () => {
      const anchors = operationsAnchors();
      const base = new URL(monitoring.runbook_base_url);
      assert.equal(base.protocol, "https:");
      assert.ok(base.pathname.endsWith("/docs/OPERATIONS.md"), base.pathname);
      const rules = find(objects, "PrometheusRule", "giftwall").spec.groups.flatMap((g) => g.rules);
      for (const { alert, labels, annotations } of rules.filter((r) => r.alert)) {
        assert.ok(["critical", "warning"].includes(labels.severity), `${alert}: severity ${labels.severity}`);
        const [url, anchor] = annotations.runbook_url.split("#");
        assert.equal(url, monitoring.runbook_base_url, alert);
        assert.ok(anchors.has(anchor), `${alert}: docs/OPERATIONS.md has no heading #${anchor}`);
      }
    });

    test("an alert fires when the lag or the dead events stop being reported, after a scan handover", { skip: !monitoring && "no monitoring Component" }, () => {
      const rules = find(objects, "PrometheusRule", "giftwall").spec.groups.flatMap((g) => g.rules);
      // A handover: the scanning replica's lease runs out, and the next one reports within its
      // status period.
      const handover = durationSeconds(config.GIFTWALL_LEASE_DURATION ?? "30s") + durationSeconds(config.GIFTWALL_CATCHUP_STATUS_EVERY ?? "30s");
      for (const series of ["giftwall_projection_lag_seconds", "giftwall_projection_dead_events"]) {
        const absent = rules.find((r) => r.alert && r.expr.includes(`absent(${series})`));
        assert.ok(absent, `no alert on absent(${series})`);
        assert.ok(durationSeconds(absent.for) > 2 * handover, `${absent.alert}: for ${absent.for}, a handover takes up to ${handover}s`);
      }
    });

    test("its namespace is restricted, and apart from it (kubectl delete -k keeps the secrets)", () => {
      const namespaces = renderNamespace(overlay);
      assert.deepEqual(namespaces.map((o) => `${o.kind}/${o.metadata.name}`), [`Namespace/${server.metadata.namespace}`]);
      const labels = namespaces[0].metadata.labels;
      assert.equal(labels["pod-security.kubernetes.io/enforce"], "restricted");
      assert.equal(labels["pod-security.kubernetes.io/enforce-version"], "latest");
      assert.deepEqual(objects.filter((o) => o.kind === "Namespace"), [], "the overlay would delete its namespace");
    });
  });
}
