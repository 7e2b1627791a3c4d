// RFC 6902 JSON Patch, applied to the mirrored public state (docs/protocol.md: "apply
// them with any RFC 6902 library"). All six operations; a failed `test` or a bad path
// throws, and the caller then asks the server for a fresh snapshot.

function tokens(pointer) {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw new Error("bad JSON pointer " + pointer);
  return pointer.slice(1).split("/").map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function arrayIndex(array, token, forAdd) {
  if (token === "-" && forAdd) return array.length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new Error("bad array index " + token);
  const index = Number(token);
  if (index > array.length || (!forAdd && index === array.length)) throw new Error("index out of range " + token);
  return index;
}

function parentOf(document, path) {
  const parts = tokens(path);
  const last = parts.pop();
  let parent = document;
  for (const part of parts) {
    parent = Array.isArray(parent) ? parent[arrayIndex(parent, part, false)] : parent[part];
    if (parent === null || typeof parent !== "object") throw new Error("no parent at " + path);
  }
  return [parent, last];
}

function get(document, path) {
  let value = document;
  for (const part of tokens(path)) {
    if (value === null || typeof value !== "object") throw new Error("no value at " + path);
    value = Array.isArray(value) ? value[arrayIndex(value, part, false)] : value[part];
  }
  if (value === undefined) throw new Error("no value at " + path);
  return value;
}

function add(document, path, value) {
  if (path === "") return value;
  const [parent, key] = parentOf(document, path);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, true), 0, value);
  else parent[key] = value;
  return document;
}

function remove(document, path) {
  const [parent, key] = parentOf(document, path);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, false), 1);
  else if (key in parent) delete parent[key];
  else throw new Error("nothing to remove at " + path);
  return document;
}

function replace(document, path, value) {
  if (path === "") return value;
  get(document, path);
  const [parent, key] = parentOf(document, path);
  if (Array.isArray(parent)) parent[arrayIndex(parent, key, false)] = value;
  else parent[key] = value;
  return document;
}

const clone = (value) => (value === undefined ? value : JSON.parse(JSON.stringify(value)));

/** Applies `operations` to `document` in place and returns the result. */
export function applyPatch(document, operations) {
  for (const op of operations) {
    switch (op.op) {
      case "add":
        document = add(document, op.path, clone(op.value));
        break;
      case "remove":
        document = remove(document, op.path);
        break;
      case "replace":
        document = replace(document, op.path, clone(op.value));
        break;
      case "move": {
        const value = get(document, op.from);
        document = add(remove(document, op.from), op.path, value);
        break;
      }
      case "copy":
        document = add(document, op.path, clone(get(document, op.from)));
        break;
      case "test":
        if (JSON.stringify(get(document, op.path)) !== JSON.stringify(op.value)) throw new Error("test failed at " + op.path);
        break;
      default:
        throw new Error("unknown patch operation " + op.op);
    }
  }
  return document;
}
