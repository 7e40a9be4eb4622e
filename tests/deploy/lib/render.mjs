// Renders deploy/k8s's overlays as `kubectl apply -k` would, and reads the rendered objects the
// way Kubernetes does, for the checks of tests/deploy.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
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

// Why the manifests cannot be rendered here, or "" when they can. Debian 12's kubectl (1.20)
// embeds kustomize 2, which has no `replacements` nor targeted `patches`.
export function renderUnavailable() {
  const version = spawnSync("kubectl", ["version", "--client"], { encoding: "utf8" });
  if (version.error) return "kubectl is not installed";
  const kustomize = /Kustomize Version: v(\d+)/.exec(version.stdout);
  if (!kustomize) return `kubectl has no kustomize:\n${version.stdout}`;
  if (Number(kustomize[1]) < 4) return `kubectl embeds kustomize v${kustomize[1]}; v4 or later is needed`;
  return "";
}

// The objects of one overlay, in the order kustomize prints them.
export function render(overlay) {
  const out = spawnSync("kubectl", ["kustomize", join(overlaysDir, overlay)], {
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  if (out.status !== 0) throw new Error(`kubectl kustomize ${overlay} failed:\n${out.stderr}`);
  return parseAllDocuments(out.stdout).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${overlay}: ${doc.errors[0].message}`);
    return doc.toJS();
  });
}

export function find(objects, kind, name) {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in the rendered manifests`);
  return found;
}

// The ConfigMap that kustomize generated as `name` (its name has a hash suffix).
export function generatedConfigMap(objects, name) {
  const found = objects.filter((o) => o.kind === "ConfigMap" && o.metadata.name.startsWith(`${name}-`));
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
