/**
 * Fields of an object that its Kubernetes schema does not have (a misspelt `tolerations`, a
 * `sleep` under the wrong parent): the API server's strict field validation refuses them, while
 * kubernetes-models' validators ignore them (their schemas allow additional properties). Those
 * validators are compiled JSON Schema code that reads every property its schema declares, and
 * enumerates the keys only of maps (labels, annotations, ConfigMap data); so the object is
 * validated again behind a Proxy that records what the validator reads, and a key of a struct it
 * never read is unknown. A spec shows it reporting a misspelt field deep in a pod and no key of a
 * map.
 *
 * Plain CommonJS, so both manifest-checks.ts (kubernetes-models, CommonJS) and
 * prometheus-operator-check.mjs (@kubernetes-models/prometheus-operator, ES modules only, run as
 * its own process) use this one walk.
 *
 * @param {new (o: object) => { validate(): void }} Model
 * @param {Record<string, unknown>} o
 * @returns {string[]}
 */
function unknownFields(Model, o) {
  const visits = new Map();
  const wrap = (value, path) => {
    if (typeof value !== 'object' || value === null) return value;
    const visit = visits.get(path) ?? { read: new Set(), enumerated: false, value };
    visits.set(path, visit);
    return new Proxy(value, {
      get(target, key) {
        visit.read.add(key);
        const v = Reflect.get(target, key);
        return typeof key === 'string' && Object.hasOwn(target, key) ? wrap(v, `${path}/${key}`) : v;
      },
      ownKeys(target) {
        visit.enumerated = true;
        return Reflect.ownKeys(target);
      },
    });
  };
  try {
    Model.prototype.validate.call(wrap(structuredClone(o), ''));
  } catch {
    // Type errors are the caller's to report; only the fields matter here.
  }
  const unknown = [];
  const walk = (value, path) => {
    if (typeof value !== 'object' || value === null) return;
    if (Array.isArray(value)) return value.forEach((v, i) => walk(v, `${path}/${i}`));
    const visit = visits.get(path);
    for (const [key, v] of Object.entries(value)) {
      // A struct the validator entered but never read this key of; a map is enumerated.
      if (visit && !visit.enumerated && !visit.read.has(key)) unknown.push(`${path}/${key}`);
      else walk(v, `${path}/${key}`);
    }
  };
  walk(o, '');
  return unknown;
}

module.exports = { unknownFields };
