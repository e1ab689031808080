/**
 * Renders a Helm chart without a helm binary, for tests on machines that have none.
 *
 * It implements the subset of Go's text/template and Sprig that k8s/helm/flagship uses, with Helm's
 * semantics: actions `{{ }}` with `{{-`/`-}}` trimming and comments; if / else if / else, range
 * (lists and maps, map keys sorted), with, define, include/template, `:=`/`=` variables with block
 * scope, pipelines and parentheses; fields of maps (a missing key is nil, a field of nil is an
 * error, as in Helm). Functions: see FUNCTIONS. Values: values.yaml deep-merged with each -f file
 * (null removes a key), as `helm install -f` does. Anything outside the subset is an error, never
 * silently rendered, so a template that renders here uses nothing this file does not know.
 *
 * Known differences from Helm: numbers are JavaScript numbers (Helm's values are float64 and Go's
 * `gt`/`eq` refuse to compare a float64 with an integer literal: templates use `int` for that);
 * `toYaml` formats with the `yaml` package (same data, maybe other quoting).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';

export type Value = unknown;
type Scope = { vars: Map<string, Value>; parent?: Scope };

interface TextNode { kind: 'text'; text: string }
interface ActionNode { kind: 'action'; pipe: Pipeline; line: number }
interface IfNode { kind: 'if'; pipe: Pipeline; then: Node[]; else: Node[]; line: number }
interface RangeNode { kind: 'range'; vars: string[]; pipe: Pipeline; body: Node[]; else: Node[]; line: number }
interface WithNode { kind: 'with'; pipe: Pipeline; body: Node[]; else: Node[]; line: number }
type Node = TextNode | ActionNode | IfNode | RangeNode | WithNode;

/** A pipeline, optionally declaring (`:=`) or assigning (`=`) a variable. */
interface Pipeline { decl?: { name: string; op: ':=' | '=' }; cmds: Command[] }
type Command = Operand[];
type Operand =
  | { t: 'field'; base: 'dot' | string; path: string[] } // .A.B, $x.A, $
  | { t: 'lit'; v: Value }
  | { t: 'ident'; name: string }
  | { t: 'paren'; pipe: Pipeline };

export class TemplateError extends Error {
  override readonly name = 'TemplateError';
}

// ---------------------------------------------------------------------------------------------
// Lexing and parsing

interface RawAction { text: string; line: number }

/** Splits a template into text and actions, applying the trim markers. */
function split(src: string, file: string): Array<string | RawAction> {
  const out: Array<string | RawAction> = [];
  let i = 0;
  while (i < src.length) {
    const open = src.indexOf('{{', i);
    if (open < 0) {
      out.push(src.slice(i));
      break;
    }
    let text = src.slice(i, open);
    let j = open + 2;
    const trimLeft = /^-[ \t\r\n]/.test(src.slice(j, j + 2));
    if (trimLeft) {
      text = text.replace(/\s+$/, '');
      j += 1;
    }
    out.push(text);
    // Find the closing braces outside string literals.
    let k = j;
    let quote: string | undefined;
    while (k < src.length) {
      const c = src[k];
      if (quote) {
        if (c === '\\' && quote === '"') k++;
        else if (c === quote) quote = undefined;
      } else if (c === '"' || c === '`') quote = c;
      else if (src.startsWith('}}', k)) break;
      k++;
    }
    if (k >= src.length) throw new TemplateError(`${file}: unclosed action at line ${lineOf(src, open)}`);
    let body = src.slice(j, k);
    let next = k + 2;
    if (/\s-$/.test(body)) {
      body = body.slice(0, -1);
      const m = /^\s*/.exec(src.slice(next))!;
      next += m[0].length;
    }
    out.push({ text: body.trim(), line: lineOf(src, open) });
    i = next;
  }
  return out;
}

const lineOf = (src: string, at: number): number => src.slice(0, at).split('\n').length;

type Tok = { t: 'str' | 'num' | 'word' | 'field' | 'var' | 'sym'; v: string };

function tokenize(s: string, where: string): Tok[] {
  const toks: Tok[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '"') {
      let j = i + 1;
      while (j < s.length && s[j] !== '"') j += s[j] === '\\' ? 2 : 1;
      toks.push({ t: 'str', v: JSON.parse(s.slice(i, j + 1)) as string });
      i = j + 1;
    } else if (c === '`') {
      const j = s.indexOf('`', i + 1);
      toks.push({ t: 'str', v: s.slice(i + 1, j) });
      i = j + 1;
    } else if (s.startsWith(':=', i)) {
      toks.push({ t: 'sym', v: ':=' });
      i += 2;
    } else if ('()|=,'.includes(c)) {
      toks.push({ t: 'sym', v: c });
      i++;
    } else {
      const m = /^(-?\d+(\.\d+)?|\$[A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*|(\.[A-Za-z0-9_]+)+|\.|[A-Za-z_][A-Za-z0-9_]*)/.exec(s.slice(i));
      if (!m) throw new TemplateError(`${where}: cannot read "${s.slice(i)}"`);
      const w = m[0];
      toks.push({ t: /^-?\d/.test(w) ? 'num' : w.startsWith('$') ? 'var' : w.startsWith('.') ? 'field' : 'word', v: w });
      i += w.length;
    }
  }
  return toks;
}

function parsePipeline(toks: Tok[], where: string): Pipeline {
  let pos = 0;
  const pipe = (): Pipeline => {
    const p: Pipeline = { cmds: [] };
    if (toks[pos]?.t === 'var' && toks[pos + 1]?.t === 'sym' && (toks[pos + 1].v === ':=' || toks[pos + 1].v === '=')) {
      p.decl = { name: toks[pos].v, op: toks[pos + 1].v as ':=' | '=' };
      pos += 2;
    }
    let cmd: Command = [];
    while (pos < toks.length) {
      const tok = toks[pos];
      if (tok.t === 'sym' && tok.v === ')') break;
      pos++;
      if (tok.t === 'sym' && tok.v === '|') {
        p.cmds.push(cmd);
        cmd = [];
      } else if (tok.t === 'sym' && tok.v === '(') {
        const inner = pipe();
        if (toks[pos]?.v !== ')') throw new TemplateError(`${where}: missing )`);
        pos++;
        cmd.push({ t: 'paren', pipe: inner });
      } else if (tok.t === 'str') cmd.push({ t: 'lit', v: tok.v });
      else if (tok.t === 'num') cmd.push({ t: 'lit', v: Number(tok.v) });
      else if (tok.t === 'field') cmd.push({ t: 'field', base: 'dot', path: tok.v === '.' ? [] : tok.v.slice(1).split('.') });
      else if (tok.t === 'var') {
        const [name, ...path] = tok.v.split('.');
        cmd.push({ t: 'field', base: name, path });
      } else if (tok.t === 'word') {
        if (tok.v === 'true' || tok.v === 'false') cmd.push({ t: 'lit', v: tok.v === 'true' });
        else if (tok.v === 'nil') cmd.push({ t: 'lit', v: null });
        else cmd.push({ t: 'ident', name: tok.v });
      } else throw new TemplateError(`${where}: unexpected "${tok.v}"`);
    }
    if (cmd.length === 0) throw new TemplateError(`${where}: empty command`);
    p.cmds.push(cmd);
    return p;
  };
  const p = pipe();
  if (pos !== toks.length) throw new TemplateError(`${where}: unexpected "${toks[pos].v}"`);
  return p;
}

function parseTemplate(src: string, file: string, defines: Map<string, Node[]>): Node[] {
  const items = split(src, file);
  let idx = 0;
  // Parses until one of `stops` (an action word), which it returns without consuming its body.
  const block = (stops: string[]): { nodes: Node[]; stop?: RawAction } => {
    const nodes: Node[] = [];
    while (idx < items.length) {
      const item = items[idx++];
      if (typeof item === 'string') {
        if (item !== '') nodes.push({ kind: 'text', text: item });
        continue;
      }
      const where = `${file}:${item.line}`;
      const text = item.text;
      if (text.startsWith('/*')) {
        if (!text.endsWith('*/')) throw new TemplateError(`${where}: a comment must fill its action`);
        continue;
      }
      const word = /^[a-z]+/.exec(text)?.[0] ?? '';
      const rest = text.slice(word.length).trim();
      if (['end', 'else'].includes(word)) {
        if (!stops.includes(word)) throw new TemplateError(`${where}: unexpected {{${text}}}`);
        return { nodes, stop: item };
      }
      if (word === 'if' || word === 'with') {
        nodes.push(conditional(word, rest, where, item.line));
      } else if (word === 'range') {
        let vars: string[] = [];
        let expr = rest;
        const m = /^(\$[A-Za-z0-9_]*)(\s*,\s*(\$[A-Za-z0-9_]*))?\s*:=/.exec(rest);
        if (m) {
          vars = m[3] ? [m[1], m[3]] : [m[1]];
          expr = rest.slice(m[0].length);
        }
        const pipe = parsePipeline(tokenize(expr, where), where);
        const body = block(['end', 'else']);
        const elseNodes = body.stop?.text === 'else' ? block(['end']).nodes : [];
        nodes.push({ kind: 'range', vars, pipe, body: body.nodes, else: elseNodes, line: item.line });
      } else if (word === 'define') {
        const name = JSON.parse(rest) as string;
        defines.set(name, block(['end']).nodes);
      } else if (word === 'template') {
        const toks = tokenize(rest, where);
        const name = toks.shift()!.v;
        const arg = toks.length ? parsePipeline(toks, where) : { cmds: [[{ t: 'lit' as const, v: null }]] };
        nodes.push({ kind: 'action', pipe: { cmds: [[{ t: 'ident', name: 'include' }, { t: 'lit', v: name }, { t: 'paren', pipe: arg }]] }, line: item.line });
      } else if (['block', 'break', 'continue'].includes(word)) {
        throw new TemplateError(`${where}: {{${word}}} is outside the supported subset`);
      } else {
        nodes.push({ kind: 'action', pipe: parsePipeline(tokenize(text, where), where), line: item.line });
      }
    }
    if (stops.length) throw new TemplateError(`${file}: missing {{end}}`);
    return { nodes };
  };
  // if/with with their else and else-if chains.
  const conditional = (word: 'if' | 'with', expr: string, where: string, line: number): IfNode | WithNode => {
    const pipe = parsePipeline(tokenize(expr, where), where);
    const body = block(['end', 'else']);
    let elseNodes: Node[] = [];
    if (body.stop && body.stop.text !== 'end') {
      const after = body.stop.text.slice(4).trim();
      if (after.startsWith('if ') || after.startsWith('with ')) {
        // `else if x` is `else` holding `if x ... end` that shares this block's end.
        const inner = after.startsWith('if ') ? 'if' : 'with';
        elseNodes = [conditional(inner, after.slice(inner.length).trim(), where, body.stop.line)];
        return word === 'if' ? { kind: 'if', pipe, then: body.nodes, else: elseNodes, line } : { kind: 'with', pipe, body: body.nodes, else: elseNodes, line };
      }
      elseNodes = block(['end']).nodes;
    }
    return word === 'if' ? { kind: 'if', pipe, then: body.nodes, else: elseNodes, line } : { kind: 'with', pipe, body: body.nodes, else: elseNodes, line };
  };
  return block([]).nodes;
}

// ---------------------------------------------------------------------------------------------
// Evaluation

/** Go template truth: false, 0, nil, and empty strings, lists and maps are false. */
export function truthy(v: Value): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v as object).length > 0;
  return true;
}

const isMap = (v: Value): v is Record<string, Value> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** How Go prints a value in a template (Helm prints nil as ""). */
function str(v: Value): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map(str).join(' ')}]`;
  return `map[${Object.keys(v as object).sort().map((k) => `${k}:${str((v as Record<string, Value>)[k])}`).join(' ')}]`;
}

const toInt = (v: Value): number => {
  const n = typeof v === 'string' ? Number.parseInt(v, 10) : typeof v === 'boolean' ? Number(v) : Number(v ?? 0);
  return Number.isFinite(n) ? Math.trunc(n) : 0;
};

function goPrintf(format: string, args: Value[]): string {
  let i = 0;
  return format.replace(/%([sdvq%])/g, (_m, verb: string) => {
    if (verb === '%') return '%';
    const a = args[i++];
    if (verb === 'd') return String(toInt(a));
    if (verb === 'q') return JSON.stringify(str(a));
    return str(a);
  });
}

type Fn = (r: Renderer, ...args: Value[]) => Value;

/** The Sprig and Helm functions this renderer knows; any other name is an error. */
const FUNCTIONS: Record<string, Fn> = {
  include: (r, name, data) => r.include(String(name), data),
  default: (_r, d, given) => (truthy(given) ? given : d),
  quote: (_r, ...xs) => xs.filter((x) => x !== undefined && x !== null).map((x) => JSON.stringify(str(x))).join(' '),
  toString: (_r: Renderer, x: Value) => str(x),
  int: (_r, x) => toInt(x),
  trunc: (_r, n, s) => String(s).slice(0, toInt(n)),
  trimSuffix: (_r, suffix, s) => (String(s).endsWith(String(suffix)) ? String(s).slice(0, -String(suffix).length) : String(s)),
  lower: (_r, s) => str(s).toLowerCase(),
  trim: (_r, s) => str(s).trim(),
  printf: (_r, f, ...args) => goPrintf(String(f), args),
  eq: (_r, a, ...bs) => bs.some((b) => a === b),
  ne: (_r, a, b) => a !== b,
  gt: (_r, a, b) => (a as number) > (b as number),
  lt: (_r, a, b) => (a as number) < (b as number),
  not: (_r, a) => !truthy(a),
  and: (_r, ...xs) => xs.find((x) => !truthy(x)) ?? xs[xs.length - 1],
  or: (_r, ...xs) => xs.find((x) => truthy(x)) ?? xs[xs.length - 1],
  empty: (_r, x) => !truthy(x),
  add: (_r, ...xs) => xs.reduce<number>((s, x) => s + toInt(x), 0),
  div: (_r, a, b) => Math.trunc(toInt(a) / toInt(b)),
  max: (_r, ...xs) => Math.max(...xs.map(toInt)),
  dict: (_r, ...kv) => {
    const out: Record<string, Value> = {};
    for (let i = 0; i + 1 < kv.length; i += 2) out[String(kv[i])] = kv[i + 1];
    return out;
  },
  list: (_r, ...xs) => xs,
  hasKey: (_r, m, k) => isMap(m) && Object.hasOwn(m, String(k)),
  index: (_r, m, ...keys) =>
    keys.reduce((v: Value, k) => {
      if (Array.isArray(v)) return v[toInt(k)];
      if (isMap(v)) return v[String(k)];
      if (v === undefined || v === null) throw new TemplateError('index of a nil value');
      throw new TemplateError(`can't index ${str(v)}`);
    }, m),
  toYaml: (_r, x) => (x === undefined || x === null ? 'null' : stringifyYaml(x, { sortMapEntries: true, lineWidth: 0 }).replace(/\n$/, '')),
  toJson: (_r, x) => JSON.stringify(x ?? null),
  indent: (_r, n, s) => {
    const pad = ' '.repeat(toInt(n));
    return pad + str(s).replace(/\n/g, `\n${pad}`);
  },
  nindent: (_r, n, s) => {
    const pad = ' '.repeat(toInt(n));
    return `\n${pad}${str(s).replace(/\n/g, `\n${pad}`)}`;
  },
  sha256sum: (_r, s) => createHash('sha256').update(str(s)).digest('hex'),
  required: (_r, msg, v) => {
    if (!truthy(v) && v !== false && v !== 0) throw new TemplateError(String(msg));
    return v;
  },
  fail: (_r, msg) => {
    throw new TemplateError(String(msg));
  },
};

class Renderer {
  constructor(private readonly defines: Map<string, Node[]>, private readonly root: Value) {}

  include(name: string, data: Value): string {
    const nodes = this.defines.get(name);
    if (!nodes) throw new TemplateError(`include: no template named "${name}"`);
    return this.run(nodes, data, { vars: new Map([['$', data]]) });
  }

  render(nodes: Node[]): string {
    return this.run(nodes, this.root, { vars: new Map([['$', this.root]]) });
  }

  private run(nodes: Node[], dot: Value, scope: Scope): string {
    let out = '';
    for (const n of nodes) {
      if (n.kind === 'text') out += n.text;
      else if (n.kind === 'action') {
        const v = this.pipeline(n.pipe, dot, scope);
        if (!n.pipe.decl) out += str(v);
      } else if (n.kind === 'if') {
        const inner: Scope = { vars: new Map(), parent: scope };
        out += truthy(this.pipeline(n.pipe, dot, inner)) ? this.run(n.then, dot, inner) : this.run(n.else, dot, inner);
      } else if (n.kind === 'with') {
        const inner: Scope = { vars: new Map(), parent: scope };
        const v = this.pipeline(n.pipe, dot, inner);
        out += truthy(v) ? this.run(n.body, v, inner) : this.run(n.else, dot, inner);
      } else {
        const v = this.pipeline(n.pipe, dot, scope);
        const entries: Array<[Value, Value]> = Array.isArray(v)
          ? v.map((x, i) => [i, x])
          : isMap(v)
            ? Object.keys(v).sort().map((k) => [k, v[k]])
            : v === undefined || v === null
              ? []
              : (() => {
                  throw new TemplateError(`line ${n.line}: range can't iterate over ${str(v)}`);
                })();
        if (entries.length === 0) out += this.run(n.else, dot, { vars: new Map(), parent: scope });
        for (const [k, x] of entries) {
          const inner: Scope = { vars: new Map(), parent: scope };
          if (n.vars.length === 1) inner.vars.set(n.vars[0], x);
          if (n.vars.length === 2) {
            inner.vars.set(n.vars[0], k);
            inner.vars.set(n.vars[1], x);
          }
          out += this.run(n.body, x, inner);
        }
      }
    }
    return out;
  }

  private pipeline(p: Pipeline, dot: Value, scope: Scope): Value {
    let prev: Value;
    let first = true;
    for (const cmd of p.cmds) {
      prev = this.command(cmd, dot, scope, first ? undefined : [prev]);
      first = false;
    }
    if (p.decl) {
      if (p.decl.op === ':=') scope.vars.set(p.decl.name, prev);
      else {
        let s: Scope | undefined = scope;
        while (s && !s.vars.has(p.decl.name)) s = s.parent;
        if (!s) throw new TemplateError(`undefined variable ${p.decl.name}`);
        s.vars.set(p.decl.name, prev);
      }
    }
    return prev;
  }

  private command(cmd: Command, dot: Value, scope: Scope, piped?: Value[]): Value {
    const [head, ...rest] = cmd;
    if (head.t === 'ident') {
      const fn = FUNCTIONS[head.name];
      if (!fn) throw new TemplateError(`function "${head.name}" is outside the supported subset`);
      const args = rest.map((o) => this.operand(o, dot, scope));
      return fn(this, ...args, ...(piped ?? []));
    }
    if (rest.length > 0 || piped) throw new TemplateError(`can't give arguments to a non-function`);
    return this.operand(head, dot, scope);
  }

  private operand(o: Operand, dot: Value, scope: Scope): Value {
    if (o.t === 'lit') return o.v;
    if (o.t === 'paren') return this.pipeline(o.pipe, dot, scope);
    if (o.t === 'ident') {
      const fn = FUNCTIONS[o.name];
      if (!fn) throw new TemplateError(`function "${o.name}" is outside the supported subset`);
      return fn(this);
    }
    let v: Value;
    if (o.base === 'dot') v = dot;
    else {
      let s: Scope | undefined = scope;
      while (s && !s.vars.has(o.base)) s = s.parent;
      if (!s) throw new TemplateError(`undefined variable ${o.base}`);
      v = s.vars.get(o.base);
    }
    for (const [i, key] of o.path.entries()) {
      if (v === undefined || v === null) throw new TemplateError(`nil pointer evaluating .${o.path.slice(0, i + 1).join('.')}`);
      if (!isMap(v)) throw new TemplateError(`can't evaluate field ${key} in ${str(v)}`);
      v = v[key];
    }
    return v;
  }
}

// ---------------------------------------------------------------------------------------------
// Charts

/** Helm's coalescing of values files: maps merge deeply, anything else replaces, null deletes. */
export function mergeValues(base: Value, over: Value): Value {
  if (!isMap(base) || !isMap(over)) return over;
  const out: Record<string, Value> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === null) delete out[k];
    else out[k] = mergeValues(base[k], v);
  }
  return out;
}

export interface ChartRender {
  values: Record<string, unknown>;
  /** Rendered text per template file (templates/x.yaml), as helm template prints them. */
  files: Record<string, string>;
  /** Every non-empty YAML document of every file. */
  documents: Array<Record<string, unknown>>;
}

export interface RenderOptions {
  /** Extra values files, applied in order after the chart's values.yaml. */
  valuesFiles?: string[];
  /** Values given inline (like --set), applied last. */
  values?: Record<string, unknown>;
  releaseName?: string;
  namespace?: string;
}

/** Renders one template text (its defines included) with the given root context: for tests of the renderer. */
export function renderString(template: string, root: Record<string, unknown>): string {
  const defines = new Map<string, Node[]>();
  return new Renderer(defines, root).render(parseTemplate(template, 'inline', defines));
}

export function readChartValues(chartDir: string, options: Pick<RenderOptions, 'valuesFiles' | 'values'> = {}): Record<string, unknown> {
  let values = (parseYaml(readFileSync(join(chartDir, 'values.yaml'), 'utf8')) ?? {}) as Value;
  for (const f of options.valuesFiles ?? []) values = mergeValues(values, parseYaml(readFileSync(f, 'utf8')) ?? {});
  if (options.values) values = mergeValues(values, options.values);
  return values as Record<string, unknown>;
}

export function renderChart(chartDir: string, options: RenderOptions = {}): ChartRender {
  const chart = parseYaml(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8')) as Record<string, string>;
  const values = readChartValues(chartDir, options);
  const templatesDir = join(chartDir, 'templates');
  // Every template, subdirectories included (templates/tests), as paths relative to templates/.
  const files = (readdirSync(templatesDir, { recursive: true }) as string[]).filter((f) => /\.(ya?ml|tpl)$/.test(f)).sort();
  const isPartial = (f: string) => basename(f).startsWith('_');
  const defines = new Map<string, Node[]>();
  const parsed: Record<string, Node[]> = {};
  // Partials (_*.tpl) first, so every define is known before anything renders.
  for (const f of [...files.filter(isPartial), ...files.filter((f) => !isPartial(f))]) {
    parsed[f] = parseTemplate(readFileSync(join(templatesDir, f), 'utf8'), `templates/${f}`, defines);
  }
  const root = {
    Values: values,
    Release: { Name: options.releaseName ?? 'flagship', Namespace: options.namespace ?? 'default', Service: 'Helm', IsInstall: true, IsUpgrade: false, Revision: 1 },
    Chart: { Name: chart['name'], Version: chart['version'], AppVersion: chart['appVersion'], Description: chart['description'] },
    Capabilities: { KubeVersion: { Version: 'v1.30.0' } },
  };
  const renderer = new Renderer(defines, root);
  const out: ChartRender = { values, files: {}, documents: [] };
  for (const f of files.filter((f) => !isPartial(f))) {
    let text: string;
    try {
      text = renderer.render(parsed[f]);
    } catch (err) {
      if (err instanceof TemplateError) throw new TemplateError(`templates/${f}: ${err.message}`);
      throw err;
    }
    out.files[`templates/${f}`] = text;
    for (const doc of text.split(/^---\s*$/m)) {
      let obj: unknown;
      try {
        obj = parseYaml(doc);
      } catch (err) {
        throw new TemplateError(`templates/${f} rendered invalid YAML: ${(err as Error).message}\n${doc}`);
      }
      if (obj !== null && obj !== undefined) out.documents.push(obj as Record<string, unknown>);
    }
  }
  return out;
}
