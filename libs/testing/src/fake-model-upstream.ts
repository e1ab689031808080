import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { dialHost } from './http';

/**
 * A local stand-in for an OpenAI-compatible model server (the gateway's `inhouse` or `hosted`
 * provider), speaking OpenAI's wire format so the real `openai` SDK and the gateway's provider layer
 * talk to it unchanged. Everything it answers is deterministic:
 *
 * - chat: the reply is `echo: ` followed by the last user message's text (cut to `max_tokens` or
 *   `max_completion_tokens` words), or by the tool result's text when the last message is a `tool`
 *   one; a token is one whitespace-separated word, so prompt tokens are the words of every message's
 *   text and completion tokens the words of the reply (times `n`: every choice is the same answer).
 *   `finish_reason` is `length` when the limit cut the reply, `stop` otherwise; a `stop` string ends
 *   the reply before the first echoed word containing it, named in `stop_reason` as vLLM does.
 * - tool calls (see toolCallOf): when `tools` are offered and `tool_choice` names one of them, or is
 *   `required`, or (absent or `auto`) the last message is the user's and names a tool, the answer is
 *   a call of that tool (`finish_reason: "tool_calls"`, id `call_fake_<choice>`), its arguments
 *   `{"<first string property>": "<the last user message's text>"}` (`{}` without one); it counts
 *   one token for the name plus the words of the arguments.
 * - streaming: one chunk per word (a tool call: its name and id, then its arguments in pieces of
 *   at most 8 characters), each choice's chunk in turn, then a chunk with the `finish_reason`, then,
 *   when `stream_options.include_usage` is true, a usage-only chunk (`choices: []`) AFTER the finish
 *   chunk, as OpenAI sends it, then `data: [DONE]`.
 * - embeddings: a unit vector per input from SHA-256 of the text (`dimensions`, default 8).
 *
 * Behaviour is set per test (`behave`, `failNext`), or for one model's requests only (`behaveFor`:
 * an upstream serving several models of which one regresses), and counted (`calls`).
 */

export type FakeEndpoint = 'chat' | 'embeddings' | 'models';

/** What a request gets instead of an answer. */
export type FakeFailure =
  | { kind: 'status'; status: number; body?: unknown }
  /** The TCP connection is reset before any byte of an answer. */
  | { kind: 'reset' }
  /** Headers never come (the socket stays open until the client gives up or the server closes). */
  | { kind: 'hang' };

export interface FakeBehaviour {
  /** Delay before the status line (first byte), in ms. */
  firstByteDelayMs: number;
  /** Delay before each streamed chunk after the first, in ms. */
  chunkDelayMs: number;
  /** Streams: destroy the connection after this many content chunks (no finish, no usage, no [DONE]). */
  breakAfterChunks: number | undefined;
  /** Leave `usage` out of answers (non-streamed) and never send the usage chunk (streamed). */
  omitUsage: boolean;
  /** Streams: end cleanly without `data: [DONE]` (some servers do). */
  omitDone: boolean;
  /**
   * Chat: report this many of the prompt tokens as cached (`usage.prompt_tokens_details.cached_tokens`,
   * at most the prompt's tokens, as OpenAI counts them: part of `prompt_tokens`); undefined: no details.
   */
  cachedPromptTokens: number | undefined;
  /**
   * Which output limit the fake honours: `both` (OpenAI's API and current servers: max_completion_tokens,
   * else max_tokens), `max_tokens` (servers that read only it: older vLLM, llama.cpp), `neither` (a
   * provider that ignores the limit and answers in full).
   */
  readsOutputLimit: 'both' | 'max_tokens' | 'neither';
  /** A failure for every request (until `reset`); `failNext` failures come first. */
  failure: FakeFailure | undefined;
}

export interface FakeModelUpstreamOptions {
  /** When set, requests must carry `Authorization: Bearer <apiKey>` (401 otherwise). Changeable later: `apiKey`. */
  apiKey?: string;
  models?: string[];
  port?: number;
  /** The bind address: loopback by default; 0.0.0.0 in a container, for the other containers. */
  host?: string;
}

const DEFAULT_BEHAVIOUR: FakeBehaviour = {
  firstByteDelayMs: 0,
  chunkDelayMs: 0,
  breakAfterChunks: undefined,
  omitUsage: false,
  omitDone: false,
  cachedPromptTokens: undefined,
  readsOutputLimit: 'both',
  failure: undefined,
};

const CREATED = 1_700_000_000;

/** Words of a text: the fake's token. */
export const fakeTokenCount = (text: string): number => text.split(/\s+/).filter((w) => w !== '').length;

/** Text of a message's `content`: a string, or the text of its `text` parts. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p: unknown) => (p && typeof p === 'object' && (p as { type?: unknown }).type === 'text' ? String((p as { text?: unknown }).text ?? '') : ''))
      .join(' ');
  }
  return '';
}

interface Message {
  role?: unknown;
  content?: unknown;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The reply the fake gives to a chat body, as words; whether `max_tokens` cut it; the `stop` string
 * that ended it (the reply stops before the first word containing one), reported as vLLM does
 * (`stop_reason` beside `finish_reason: "stop"`).
 */
function reply(body: Record<string, unknown>, reads: FakeBehaviour['readsOutputLimit'] = 'both'): { words: string[]; cut: boolean; stoppedBy: string | null } {
  const messages = Array.isArray(body.messages) ? (body.messages as Message[]) : [];
  const last = messages[messages.length - 1];
  const source = last?.role === 'tool' ? last : [...messages].reverse().find((m) => m && m.role === 'user');
  let words = ['echo:', ...contentText(source?.content).split(/\s+/).filter((w) => w !== '')];
  const stops = (typeof body.stop === 'string' ? [body.stop] : Array.isArray(body.stop) ? body.stop : []).filter((x): x is string => typeof x === 'string' && x !== '');
  let stoppedBy: string | null = null;
  // The echoed words only: `echo:` itself never stops the reply.
  const at = words.findIndex((w, i) => i > 0 && stops.some((x) => w.includes(x)));
  if (at >= 0) {
    stoppedBy = stops.find((x) => words[at]!.includes(x))!;
    words = words.slice(0, at);
  }
  const limit = reads === 'neither' ? NaN : Number(reads === 'max_tokens' ? body.max_tokens : (body.max_completion_tokens ?? body.max_tokens));
  return Number.isInteger(limit) && limit > 0 && words.length > limit ? { words: words.slice(0, limit), cut: true, stoppedBy: null } : { words, cut: false, stoppedBy };
}

/** A tool call the fake answers with. */
export interface FakeToolCall {
  name: string;
  arguments: string;
}

/**
 * The tool call a chat body gets, if any: `tool_choice` naming an offered function, or `required`
 * (the tool the last user message names, else the first), or, when it is absent or `auto`, the
 * offered function whose name the last message (a user's) contains.
 */
export function toolCallOf(body: Record<string, unknown>): FakeToolCall | undefined {
  const tools = (Array.isArray(body.tools) ? body.tools : [])
    .map((t: unknown) => (isObject(t) && t.type === 'function' && isObject(t.function) && typeof t.function.name === 'string' ? t.function : undefined))
    .filter((f): f is Record<string, unknown> & { name: string } => f !== undefined);
  if (tools.length === 0) return undefined;
  const choice = body.tool_choice;
  const messages = Array.isArray(body.messages) ? (body.messages as Message[]) : [];
  const last = messages[messages.length - 1];
  const lastUser = last?.role === 'user' ? contentText(last.content) : undefined;
  const named = lastUser === undefined ? undefined : tools.find((f) => lastUser.includes(f.name));
  let tool: (Record<string, unknown> & { name: string }) | undefined;
  if (isObject(choice) && isObject(choice.function)) tool = tools.find((f) => f.name === (choice.function as Record<string, unknown>).name);
  else if (choice === 'required') tool = named ?? tools[0];
  else if (choice === undefined || choice === null || choice === 'auto') tool = named;
  if (tool === undefined) return undefined;
  const properties = isObject(tool.parameters) && isObject(tool.parameters.properties) ? tool.parameters.properties : {};
  const first = Object.keys(properties).find((k) => isObject(properties[k]) && (properties[k] as Record<string, unknown>).type === 'string');
  const userText = [...messages].reverse().find((m) => m && m.role === 'user');
  const args = first === undefined ? {} : { [first]: contentText(userText?.content) };
  return { name: tool.name, arguments: JSON.stringify(args) };
}

/** Completion tokens of a tool call: its name, then the words of its arguments. */
const toolCallTokens = (call: FakeToolCall): number => 1 + fakeTokenCount(call.arguments);

/** `n`, as the fake reads it. */
function choicesOf(body: Record<string, unknown>): number {
  const n = Number(body.n);
  return Number.isInteger(n) && n > 0 ? n : 1;
}

function promptTokens(body: Record<string, unknown>): number {
  const messages = Array.isArray(body.messages) ? (body.messages as Message[]) : [];
  return messages.reduce((n, m) => n + fakeTokenCount(contentText(m?.content)), 0);
}

/** A deterministic unit vector for a text. */
export function fakeEmbedding(text: string, dimensions = 8): number[] {
  const out: number[] = [];
  let block = createHash('sha256').update(text).digest();
  for (let i = 0; out.length < dimensions; i++) {
    if (i > 0 && i % 16 === 0) block = createHash('sha256').update(block).digest();
    out.push(block.readUInt16BE((i % 16) * 2) / 65535 - 0.5);
  }
  const norm = Math.hypot(...out) || 1;
  return out.map((v) => v / norm);
}

const sleep = (ms: number): Promise<void> => (ms > 0 ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve());

function openAiError(res: ServerResponse, status: number, message: string, code: string | null, type = 'invalid_request_error'): void {
  const body = JSON.stringify({ error: { message, type, param: null, code } });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

export class FakeModelUpstream {
  /** Requests received per endpoint (counted on arrival, failed ones included). */
  readonly calls: Record<FakeEndpoint, number> = { chat: 0, embeddings: 0, models: 0 };
  /** The last parsed request body per endpoint, to assert what the caller sent. */
  readonly lastBody: Partial<Record<FakeEndpoint, Record<string, unknown>>> = {};
  /** The last request's headers per endpoint. */
  readonly lastHeaders: Partial<Record<FakeEndpoint, IncomingMessage['headers']>> = {};
  /** The bearer key required, if any; set it to rotate. */
  apiKey: string | undefined;
  models: string[];
  private behaviour: FakeBehaviour = { ...DEFAULT_BEHAVIOUR };
  /** Changes over `behaviour` for the requests naming a model (the body's `model`). */
  private readonly perModel = new Map<string, Partial<FakeBehaviour>>();
  private readonly queued: FakeFailure[] = [];
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    readonly host: string,
    options: FakeModelUpstreamOptions,
  ) {
    this.apiKey = options.apiKey;
    this.models = options.models ?? ['fake-chat-1', 'fake-embed-1'];
  }

  static async start(options: FakeModelUpstreamOptions = {}): Promise<FakeModelUpstream> {
    const server = createServer();
    // Many keep-alive connections from load tests: no idle cut before the client's.
    server.keepAliveTimeout = 65_000;
    const host = options.host ?? '127.0.0.1';
    server.listen(options.port ?? 0, host);
    await once(server, 'listening');
    const self = new FakeModelUpstream(server, (server.address() as { port: number }).port, host, options);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      self.handle(req, res).catch(() => res.destroy());
    });
    server.on('connection', (s: Socket) => {
      self.sockets.add(s);
      s.once('close', () => self.sockets.delete(s));
    });
    return self;
  }

  /** OpenAI's base URL shape, from this machine: `http://127.0.0.1:<port>/v1`. */
  get url(): string {
    return `http://${dialHost(this.host)}:${this.port}/v1`;
  }

  get totalCalls(): number {
    return this.calls.chat + this.calls.embeddings + this.calls.models;
  }

  /** Changes behaviour for every following request (merged onto the current one). */
  behave(changes: Partial<FakeBehaviour>): void {
    this.behaviour = { ...this.behaviour, ...changes };
  }

  /**
   * Changes behaviour for the following requests whose body names `model` only (merged onto the
   * behaviour `behave` sets and onto this model's earlier changes): one model slow or failing while
   * the others answer. `failNext` failures still come first, whatever the model.
   */
  behaveFor(model: string, changes: Partial<FakeBehaviour>): void {
    this.perModel.set(model, { ...this.perModel.get(model), ...changes });
  }

  /** The next `times` requests fail so; later ones behave as configured. */
  failNext(failure: FakeFailure, times = 1): void {
    for (let i = 0; i < times; i++) this.queued.push(failure);
  }

  resetCalls(): void {
    for (const k of Object.keys(this.calls) as FakeEndpoint[]) this.calls[k] = 0;
  }

  /** Default behaviour (for every model), no queued failures, counters at zero (the API key is kept). */
  reset(): void {
    this.behaviour = { ...DEFAULT_BEHAVIOUR };
    this.perModel.clear();
    this.queued.length = 0;
    this.resetCalls();
  }

  /** Cuts every open connection (hung ones included) without closing the server. */
  dropConnections(): void {
    for (const s of this.sockets) s.destroy();
  }

  async close(): Promise<void> {
    this.dropConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private endpointOf(req: IncomingMessage): FakeEndpoint | undefined {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'POST' && path === '/v1/chat/completions') return 'chat';
    if (req.method === 'POST' && path === '/v1/embeddings') return 'embeddings';
    if (req.method === 'GET' && path === '/v1/models') return 'models';
    return undefined;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const endpoint = this.endpointOf(req);
    if (!endpoint) return openAiError(res, 404, `Unknown route ${req.method} ${req.url}`, 'unknown_url');
    this.calls[endpoint]++;
    this.lastHeaders[endpoint] = req.headers;

    let parsed: unknown;
    try {
      parsed = endpoint === 'models' ? undefined : JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      parsed = undefined;
    }
    const model = isObject(parsed) && typeof parsed.model === 'string' ? parsed.model : undefined;
    const b: FakeBehaviour = { ...this.behaviour, ...(model === undefined ? undefined : this.perModel.get(model)) };
    const failure = this.queued.shift() ?? b.failure;
    if (failure?.kind === 'reset') {
      req.socket.resetAndDestroy();
      return;
    }
    if (failure?.kind === 'hang') return;

    await sleep(b.firstByteDelayMs);
    if (res.destroyed) return;
    if (failure?.kind === 'status') {
      const body = JSON.stringify(failure.body ?? { error: { message: `fake upstream failure ${failure.status}`, type: 'server_error', param: null, code: null } });
      res.writeHead(failure.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    if (this.apiKey !== undefined && req.headers.authorization !== `Bearer ${this.apiKey}`) {
      return openAiError(res, 401, 'Incorrect API key provided.', 'invalid_api_key');
    }
    if (endpoint === 'models') return this.sendJson(res, { object: 'list', data: this.models.map((id) => ({ id, object: 'model', created: CREATED, owned_by: 'fake' })) });

    if (!isObject(parsed)) return openAiError(res, 400, 'We could not parse the JSON body of your request.', null);
    const body = parsed;
    this.lastBody[endpoint] = body;
    if (typeof body.model !== 'string') return openAiError(res, 400, 'you must provide a model parameter', null);
    if (endpoint === 'embeddings') return this.embeddings(res, body, b);
    if (!Array.isArray(body.messages)) return openAiError(res, 400, "Missing required parameter: 'messages'.", 'missing_required_parameter');
    if (body.stream === true) return this.stream(res, body, b);
    const prompt = promptTokens(body);
    const n = choicesOf(body);
    const call = toolCallOf(body);
    if (call !== undefined) {
      return this.sendJson(res, {
        id: 'chatcmpl-fake',
        object: 'chat.completion',
        created: CREATED,
        model: body.model,
        choices: Array.from({ length: n }, (_, index) => ({
          index,
          message: { role: 'assistant', content: null, refusal: null, tool_calls: [{ id: `call_fake_${index}`, type: 'function', function: call }] },
          logprobs: null,
          finish_reason: 'tool_calls',
        })),
        ...(b.omitUsage ? {} : { usage: this.chatUsage(prompt, toolCallTokens(call) * n, b) }),
      });
    }
    const { words, cut, stoppedBy } = reply(body, b.readsOutputLimit);
    this.sendJson(res, {
      id: 'chatcmpl-fake',
      object: 'chat.completion',
      created: CREATED,
      model: body.model,
      choices: Array.from({ length: n }, (_, index) => ({ index, message: { role: 'assistant', content: words.join(' '), refusal: null }, logprobs: null, finish_reason: cut ? 'length' : 'stop', ...(stoppedBy === null ? {} : { stop_reason: stoppedBy }) })),
      ...(b.omitUsage ? {} : { usage: this.chatUsage(prompt, words.length * n, b) }),
    });
  }

  /** A chat answer's `usage`, with `prompt_tokens_details` when cachedPromptTokens is set. */
  private chatUsage(prompt: number, completion: number, b: FakeBehaviour): Record<string, unknown> {
    const cached = b.cachedPromptTokens;
    return {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
      ...(cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: Math.min(cached, prompt), audio_tokens: 0 } }),
    };
  }

  private sendJson(res: ServerResponse, value: unknown): void {
    const text = JSON.stringify(value);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  private embeddings(res: ServerResponse, body: Record<string, unknown>, b: FakeBehaviour): void {
    const input = body.input;
    const texts = typeof input === 'string' ? [input] : Array.isArray(input) && input.every((i) => typeof i === 'string') ? (input as string[]) : undefined;
    if (!texts) return openAiError(res, 400, "'input' must be a string or an array of strings.", null);
    const dimensions = Number.isInteger(body.dimensions) && (body.dimensions as number) > 0 ? (body.dimensions as number) : 8;
    const tokens = texts.reduce((n, t) => n + fakeTokenCount(t), 0);
    this.sendJson(res, {
      object: 'list',
      data: texts.map((t, index) => ({ object: 'embedding', index, embedding: fakeEmbedding(t, dimensions) })),
      model: body.model,
      ...(b.omitUsage ? {} : { usage: { prompt_tokens: tokens, total_tokens: tokens } }),
    });
  }

  /** Cuts the connection once what was written has left, so the client reads it and then the break. */
  private async breakOff(res: ServerResponse): Promise<void> {
    await new Promise<void>((r) => res.write('', () => r()));
    await sleep(5);
    res.socket?.destroy();
  }

  private async stream(res: ServerResponse, body: Record<string, unknown>, b: FakeBehaviour): Promise<void> {
    const prompt = promptTokens(body);
    const n = choicesOf(body);
    const call = toolCallOf(body);
    // Each step's delta, the same for every choice; the first carries the role.
    let deltas: Array<Record<string, unknown>>;
    let finish: string;
    let completion: number;
    let stoppedBy: string | null = null;
    if (call !== undefined) {
      const pieces = call.arguments.match(/[\s\S]{1,8}/g) ?? [];
      deltas = [
        { role: 'assistant', content: null, tool_calls: [{ index: 0, id: '', type: 'function', function: { name: call.name, arguments: '' } }] },
        ...pieces.map((p) => ({ tool_calls: [{ index: 0, function: { arguments: p } }] })),
      ];
      finish = 'tool_calls';
      completion = toolCallTokens(call);
    } else {
      const r = reply(body, b.readsOutputLimit);
      const { words, cut } = r;
      stoppedBy = r.stoppedBy;
      deltas = [{ role: 'assistant', content: '' }, ...words.map((w, i) => ({ content: i === 0 ? w : ` ${w}` }))];
      finish = cut ? 'length' : 'stop';
      completion = words.length;
    }
    const options = body.stream_options as { include_usage?: unknown } | undefined;
    const includeUsage = options?.include_usage === true && !b.omitUsage;
    // OpenAI sends `usage: null` on every chunk when usage was asked for.
    const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: CREATED, model: body.model, system_fingerprint: null };
    const event = (choices: unknown[], usage?: unknown): string =>
      `data: ${JSON.stringify({ ...base, choices, ...(includeUsage ? { usage: usage ?? null } : {}) })}\n\n`;
    /** A delta for choice `index` (a tool call's id names its choice). */
    const forChoice = (delta: Record<string, unknown>, index: number): Record<string, unknown> =>
      Array.isArray(delta.tool_calls) && (delta.tool_calls[0] as { id?: string }).id === ''
        ? { ...delta, tool_calls: [{ ...(delta.tool_calls[0] as object), id: `call_fake_${index}` }] }
        : delta;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    for (let i = 0; i < deltas.length; i++) {
      // The first (role) chunk is not a content chunk: breakAfterChunks counts those after it.
      if (i > 0) {
        if (b.breakAfterChunks !== undefined && i - 1 >= b.breakAfterChunks) return this.breakOff(res);
        await sleep(b.chunkDelayMs);
        if (res.destroyed) return;
      }
      for (let c = 0; c < n; c++) res.write(event([{ index: c, delta: forChoice(deltas[i]!, c), logprobs: null, finish_reason: null }]));
    }
    if (b.breakAfterChunks !== undefined && deltas.length - 1 >= b.breakAfterChunks) return this.breakOff(res);
    await sleep(b.chunkDelayMs);
    if (res.destroyed) return;
    for (let c = 0; c < n; c++) res.write(event([{ index: c, delta: {}, logprobs: null, finish_reason: finish, ...(stoppedBy === null ? {} : { stop_reason: stoppedBy }) }]));
    if (includeUsage) res.write(event([], this.chatUsage(prompt, completion * n, b)));
    res.end(b.omitDone ? undefined : 'data: [DONE]\n\n');
  }
}
