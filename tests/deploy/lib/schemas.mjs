// Validates rendered objects against the Kubernetes API's schemas (and the prometheus-operator's
// for its resources), offline: the kubernetes-models packages carry them, compiled.
//
// Those schemas, like the API server without strict field validation, let unknown fields by: a
// misspelt `readOnlyRootFileSystem` would be dropped without a word. So the object is validated
// through proxies that note each field the compiled validator reads; a field it never read is one
// the schema does not have (maps such as labels are read whole: any key is fine there).

// The package that has the models of an API group.
function modelPackage(group) {
  if (group === "monitoring.coreos.com") {
    return "@kubernetes-models/prometheus-operator/monitoring.coreos.com";
  }
  return group === "" ? "kubernetes-models" : `kubernetes-models/${group}`;
}

// A copy of `value` whose objects record in `read` the path of each field read from them.
function recordReads(value, path, read) {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((item, i) => recordReads(item, `${path}/${i}`, read));
  const copy = {};
  for (const [key, item] of Object.entries(value)) copy[key] = recordReads(item, `${path}/${key}`, read);
  return new Proxy(copy, {
    get(target, key, receiver) {
      if (typeof key === "string" && Object.hasOwn(target, key)) read.add(`${path}/${key}`);
      return Reflect.get(target, key, receiver);
    },
  });
}

// The path of every field of `value`, at every depth.
function fieldPaths(value, path = "", out = []) {
  if (value === null || typeof value !== "object") return out;
  for (const [key, item] of Object.entries(value)) {
    const itemPath = `${path}/${key}`;
    if (!Array.isArray(value)) out.push(itemPath);
    fieldPaths(item, itemPath, out);
  }
  return out;
}

// Throws, naming the object and what in it breaks the schema.
export async function validateObject(object) {
  const [group, version] = object.apiVersion.includes("/")
    ? object.apiVersion.split("/")
    : ["", object.apiVersion];
  const what = `${object.kind}/${object.metadata?.name} (${object.apiVersion})`;
  let models;
  try {
    models = await import(`${modelPackage(group)}/${version}/${object.kind}`);
  } catch (error) {
    throw new Error(`${what}: no schema known for this kind (${error.code ?? error.message})`);
  }
  const read = new Set();
  try {
    // The model's own validate(), on the recording copy (a model would copy it, reading it all).
    models[object.kind].prototype.validate.call(recordReads(object, "", read));
  } catch (error) {
    throw new Error(`${what} does not match its schema: ${error.message}`);
  }
  const unknown = fieldPaths(object).filter((path) => !read.has(path));
  if (unknown.length > 0) throw new Error(`${what} has fields its schema does not know: ${unknown.join(", ")}`);
}
