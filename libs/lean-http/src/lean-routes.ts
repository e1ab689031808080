import type { Server } from 'node:http';
import { type INestApplication, Logger, type Type } from '@nestjs/common';
import {
  BODY_LIMIT_BYTES,
  bodyValidator,
  type ErrorStatus,
  parseJsonBody,
  problemResponses,
} from '@flagship/problem-details';
import { type DeclaredRoute, type DeclaredRoutes, HttpMetrics, type OperationObject, unsafePathReason } from '@flagship/service-kit';
import { BufferedMetrics } from './buffered-metrics';
import type { ErrorWriter, Exchange } from './exchange';
import { answerFailure, installLeanRouter, type LeanRoute, LeanRouter } from './lean-router';

/** Path parameters by name (`:flagKey` is `params.flagKey`), each one percent-decoded segment. */
export type RouteParams = Readonly<Record<string, string>>;

/** A JSON body as body-parser hands it over (parsed, not yet validated), and the route's validation. */
export interface JsonBody<T> {
  /** The parsed JSON; undefined when there was no body. */
  readonly value: unknown;
  /**
   * The value validated by the route's rules (StrictValidationPipe: 422 for unknown fields, wrong
   * types, NUL or lone surrogates). Called by the handler when its guards have passed, as Nest runs
   * pipes after guards, so an anonymous caller learns nothing of the body's rules.
   */
  validate(): T | Promise<T>;
}

/** How a route takes its body: as text (its protocol words its own errors), or as JSON by the body rules. */
export type BodyRule<B> = {
  /** Parses the UTF-8 text ('' for none); throws a ProblemException to refuse it. */
  read(text: string): B;
  /** The statuses its refusals use, for the route's documented problems. */
  problems: readonly ErrorStatus[];
  /** The OpenAPI requestBody, for a documented route. */
  requestBody?: Record<string, unknown>;
  /** The DTO the requestBody refers to (a component schema). */
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  model?: Function;
};

/** The UTF-8 text as it came ('' for none): the gateway's and orep's protocols answer bad bodies in their own words. */
export const TEXT_BODY: BodyRule<string> = { read: (text) => text, problems: [] };

/**
 * A JSON body by the body rules every management-API route follows (libs/problem-details
 * body-rules.ts: malformed or too deep 400; the reader's 413 and 415), validated against `dto` (a
 * DTO class) or, for a free-form object, `schema` (its OpenAPI schema; validated as any object body).
 */
export function jsonBody<T>(rule: { dto: Type<T> } | { schema: Record<string, unknown>; description?: string }): BodyRule<JsonBody<T>> {
  const dto = 'dto' in rule ? rule.dto : undefined;
  const validate = bodyValidator<T>(dto ?? Object);
  const schema = dto !== undefined ? { $ref: `#/components/schemas/${dto.name}` } : (rule as { schema: Record<string, unknown> }).schema;
  const description = 'description' in rule ? rule.description : undefined;
  return {
    read: (text) => {
      const value = parseJsonBody(text);
      return { value, validate: () => validate(value) };
    },
    problems: [400, 413, 415, 422],
    requestBody: { required: true, ...(description !== undefined ? { description } : {}), content: { 'application/json': { schema } } },
    model: dto,
  };
}

/** A header the route reads, for its OpenAPI operation. */
export interface HeaderDoc {
  name: string;
  description: string;
  required?: boolean;
}

/** What a route's OpenAPI operation says beyond what its declaration gives (path parameters, body, problems). */
export interface RouteDoc {
  operationId: string;
  summary: string;
  tags: readonly string[];
  headers?: readonly HeaderDoc[];
  /** The success: its status, what it means, and the DTO of its JSON body. */
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  answer: { status: number; description: string; dto: Function };
}

/**
 * A route answered on the lean HTTP layer, declared once: the router, the body's reading and
 * refusals, the handler and, when documented, its OpenAPI operation all come from this object.
 * `H` is what the handler runs on (the app's handler object, given at installation).
 */
export interface RouteDeclaration<H, B = string> {
  method: LeanRoute['method'];
  /** `/exact/path` or with `:param` segments (`/api/flags/:flagKey/evaluate`), as LeanRoute. */
  path: string;
  /** Another method: 'refuse' answers 405 (the default); 'fallback' hands the request to Express. */
  otherMethods?: LeanRoute['otherMethods'];
  schedule?: LeanRoute['schedule'];
  /**
   * 'bearer': the caller authenticates with a bearer token (documented with its 401 and 403);
   * `guard` decides it before the body is read where the route does it there.
   */
  auth?: 'bearer';
  /** Runs before the body is read; answers and returns false to stop (LeanRoute.guard). */
  guard?: (x: Exchange, target: H) => boolean | Promise<boolean>;
  /** Default TEXT_BODY. */
  body?: BodyRule<B>;
  /**
   * Answers the request. A ProblemException thrown (or rejected) is answered in the app's error
   * format; anything else is a 500 that tells nothing, logged (a dependency down: 503, Retry-After).
   */
  handle: (x: Exchange, params: RouteParams, body: B, target: H) => void | Promise<unknown>;
  /** Further statuses the handler answers, beyond the body's and the auth's. */
  problems?: readonly ErrorStatus[];
  /** Its OpenAPI operation; undocumented without. */
  doc?: RouteDoc;
}

/** Declares a route (the types of `target` and the body checked where it is written). */
export function route<H, B = string>(declaration: RouteDeclaration<H, B>): RouteDeclaration<H, B> {
  return declaration;
}

// Any route of a target: the body type is the declaration's own business.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute<H> = RouteDeclaration<H, any>;

const paramNames = (path: string): string[] =>
  path
    .split('/')
    .filter((s) => s.startsWith(':'))
    .map((s) => s.slice(1));

/** Every status the route may answer with a problem, in order: its auth's, its body's and its own. */
export function routeProblems(declaration: AnyRoute<never>): ErrorStatus[] {
  const all = new Set<ErrorStatus>([...(declaration.auth === 'bearer' ? ([401, 403] as const) : []), ...(declaration.body ?? TEXT_BODY).problems, ...(declaration.problems ?? [])]);
  return [...all].sort((a, b) => a - b);
}

/** The route's OpenAPI operation (undefined when it has no `doc`). */
export function openApiOperation(declaration: AnyRoute<never>): OperationObject | undefined {
  const doc = declaration.doc;
  if (doc === undefined) return undefined;
  const body = declaration.body ?? TEXT_BODY;
  const parameters = [
    ...(doc.headers ?? []).map((h) => ({ name: h.name, in: 'header', description: h.description, required: h.required ?? false, schema: { type: 'string' } })),
    ...paramNames(declaration.path).map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
  ];
  const answer = { description: doc.answer.description, content: { 'application/json': { schema: { $ref: `#/components/schemas/${doc.answer.dto.name}` } } } };
  return {
    operationId: doc.operationId,
    summary: doc.summary,
    tags: [...doc.tags],
    ...(declaration.auth === 'bearer' ? { security: [{ bearer: [] }] } : {}),
    parameters,
    ...(body.requestBody !== undefined ? { requestBody: body.requestBody } : {}),
    responses: { [String(doc.answer.status)]: answer, ...problemResponses(...routeProblems(declaration)) },
  } as OperationObject;
}

/** The documented routes as an app's OpenAPI document takes them (buildOpenApiDocument), with the DTOs they refer to. */
export function declaredRoutes(declarations: ReadonlyArray<AnyRoute<never>>): DeclaredRoutes {
  const routes: DeclaredRoute[] = [];
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  const models = new Set<Function>();
  for (const d of declarations) {
    const operation = openApiOperation(d);
    if (operation === undefined) continue;
    routes.push({ method: d.method, path: d.path, operation });
    const model = (d.body ?? TEXT_BODY).model;
    if (model !== undefined) models.add(model);
    models.add(d.doc!.answer.dto);
  }
  return { routes, models: [...models] };
}

const logger = new Logger('LeanRoutes');

/** The LeanRoute the router runs for a declaration, bound to its target. */
export function leanRoute<H>(declaration: AnyRoute<H>, target: H): LeanRoute {
  const names = paramNames(declaration.path);
  const body = declaration.body ?? TEXT_BODY;
  const handle = declaration.handle;
  const guard = declaration.guard;
  const paramsOf =
    names.length === 0
      ? (): RouteParams => NO_PARAMS
      : names.length === 1
        ? (params: readonly string[]): RouteParams => ({ [names[0]!]: params[0]! })
        : (params: readonly string[]): RouteParams => Object.fromEntries(names.map((n, i) => [n, params[i]!]));
  return {
    method: declaration.method,
    path: declaration.path,
    otherMethods: declaration.otherMethods,
    schedule: declaration.schedule,
    guard: guard === undefined ? undefined : (x) => guard(x, target),
    run: (x, _param, text, params) => {
      try {
        const done = handle(x, paramsOf(params), body === TEXT_BODY ? text : body.read(text), target);
        if (done !== undefined) return done.catch((err: unknown) => answerFailure(x, err, logger));
      } catch (err) {
        answerFailure(x, err, logger);
      }
      return undefined;
    },
  };
}

const NO_PARAMS: RouteParams = Object.freeze({});

export interface LeanRoutesOptions<H> {
  /** Logger context of the router. */
  name: string;
  /** What the handlers run on. */
  target: H;
  routes: ReadonlyArray<AnyRoute<H>>;
  /** The app's error format; default problem+json. */
  errors?: ErrorWriter;
  /** Paths under these that match no route are answered 404 in the app's format (LeanRouterOptions). */
  ownedPrefixes?: readonly string[];
  /** As Express' refuseUnsafePath for every other route: a control character in the decoded path is 400, before anything reads it. */
  refuseUnsafePaths?: boolean;
  /** Runs when the server closes (caches to stop). */
  onClose?: () => void;
}

/**
 * bootstrapService's `configure` hook of an app's hot paths: its declared routes on the lean HTTP
 * layer in front of Express (which keeps every other request), counted in the app's HttpMetrics,
 * bodies bounded by the body rules' limit.
 */
export function installLeanRoutes<H>(app: INestApplication, options: LeanRoutesOptions<H>): LeanRouter {
  const server = app.getHttpServer() as Server;
  const metrics = new BufferedMetrics(app.get(HttpMetrics));
  server.once('close', () => {
    metrics.close();
    options.onClose?.();
  });
  const refuseUnsafe = options.refuseUnsafePaths === true;
  return installLeanRouter(server, (fallback) => {
    const router = new LeanRouter({ metrics, fallback, bodyLimit: BODY_LIMIT_BYTES, errors: options.errors, ownedPrefixes: options.ownedPrefixes, name: options.name });
    for (const declaration of options.routes) {
      const lean = leanRoute(declaration, options.target);
      router.add(refuseUnsafe ? withSafePath(lean) : lean);
    }
    return router;
  });
}

/** The route behind Express' unsafe-path rule (service-kit's unsafePathReason), checked before its guard and body. */
function withSafePath(route: LeanRoute): LeanRoute {
  const guard = route.guard;
  return {
    ...route,
    guard: (x) => {
      const reason = unsafePathReason(x.req.url ?? '/');
      if (reason !== undefined) {
        x.error({ status: 400, code: 'bad-request', message: reason });
        return false;
      }
      return guard === undefined ? true : guard(x);
    },
  };
}
