import { type ArgumentMetadata, Injectable, type Type, ValidationPipe, type ValidationError } from '@nestjs/common';
import { getMetadataStorage } from 'class-validator';
import { MAX_JSON_DEPTH } from './json-depth';
import { ProblemException } from './problem.exception';
import { CommonProblems } from './problem-types';

/** Flattens class-validator's tree into `{ "rules[0].op": "message" }`. */
export function flattenValidationErrors(errors: ValidationError[], parent = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of errors) {
    const path = parent === '' ? e.property : /^\d+$/.test(e.property) ? `${parent}[${e.property}]` : `${parent}.${e.property}`;
    if (e.constraints) {
      const messages = Object.entries(e.constraints).map(([name, msg]) =>
        name === 'whitelistValidation' ? 'is not an allowed field' : msg,
      );
      out[path] = messages.join('; ');
    }
    if (e.children?.length) Object.assign(out, flattenValidationErrors(e.children, path));
  }
  return out;
}

/** NUL, or a UTF-16 surrogate without its pair: Postgres stores neither, and no text means them. */
const UNSAFE_IN_TEXT = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const childPath = (parent: string, key: string | number): string =>
  typeof key === 'number' ? `${parent}[${key}]` : parent === '' ? key : `${parent}.${key}`;

/**
 * Every string (and object key) holding NUL or a lone surrogate, by path (`rules[0].values[2]`),
 * anywhere in a parsed body, query or path parameter. The depth is bounded where bodies are parsed.
 */
export function findUnsafeText(value: unknown, path = '', out: Record<string, string> = {}): Record<string, string> {
  if (typeof value === 'string') {
    if (UNSAFE_IN_TEXT.test(value)) out[path === '' ? 'body' : path] = 'must not contain NUL characters or unpaired surrogates';
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => findUnsafeText(v, childPath(path, i), out));
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (UNSAFE_IN_TEXT.test(k)) out[childPath(path, k)] = 'the field name must not contain NUL characters or unpaired surrogates';
      else findUnsafeText(v, childPath(path, k), out);
    }
  }
  return out;
}

/** @nestjs/swagger's metadata keys (its constants are not exported from the package root). */
const SWAGGER_PROPERTIES = 'swagger/apiModelPropertiesArray';
const SWAGGER_PROPERTY = 'swagger/apiModelProperties';

/**
 * `null` in a field the DTO does not declare `nullable` (in its OpenAPI metadata), by path, in the
 * validated DTO and the DTOs nested in it. class-validator's @IsOptional lets null through like an
 * absent field, and a null written to a NOT NULL column is a 500; the document is the contract.
 */
export function findUndeclaredNulls(dto: unknown, path = '', out: Record<string, string> = {}, depth = 0): Record<string, string> {
  if (dto === null || typeof dto !== 'object' || depth > 32) return out;
  if (Array.isArray(dto)) {
    dto.forEach((v, i) => findUndeclaredNulls(v, childPath(path, i), out, depth + 1));
    return out;
  }
  const proto = Object.getPrototypeOf(dto) as object | null;
  if (proto === null || proto === Object.prototype) return out; // a free-form object: any JSON
  const declared = (Reflect.getMetadata(SWAGGER_PROPERTIES, proto) as string[] | undefined) ?? [];
  for (const entry of declared) {
    const key = entry.replace(/^:/, '');
    const value = (dto as Record<string, unknown>)[key];
    if (value === null) {
      const options = Reflect.getMetadata(SWAGGER_PROPERTY, proto, key) as { nullable?: boolean } | undefined;
      if (options?.nullable !== true) out[childPath(path, key)] = 'must not be null';
    } else if (typeof value === 'object') {
      findUndeclaredNulls(value, childPath(path, key), out, depth + 1);
    }
  }
  return out;
}

export function validationProblem(errors: Record<string, string>, detail?: string): ProblemException {
  const fields = Object.keys(errors);
  return new ProblemException(
    CommonProblems['validation-failed'],
    detail ?? `The request has ${fields.length} invalid field${fields.length === 1 ? '' : 's'}: ${fields.join(', ')}.`,
    { errors },
  );
}

/**
 * The global pipe: DTO classes validated strictly (unknown fields refused, no type coercion),
 * every failure a 422 problem with `errors`.
 */
@Injectable()
export class StrictValidationPipe extends ValidationPipe {
  constructor() {
    super({
      whitelist: true,
      forbidNonWhitelisted: true,
      forbidUnknownValues: true,
      transform: true,
      transformOptions: { enableImplicitConversion: false },
      validationError: { target: false, value: false },
      exceptionFactory: (errors) => validationProblem(flattenValidationErrors(errors)),
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    // Every body the apps take is a JSON object (free-form ones too, such as an evaluation context).
    if (metadata.type === 'body' && metadata.data === undefined) {
      if (value === undefined || value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw validationProblem({ body: 'must be a JSON object' }, 'The request body must be a JSON object.');
      }
    }
    // `@Query('name') x: string` is not validated by class-validator: `?name=a&name=b` would hand
    // the handler an array, and `name[a]=1` an object.
    if (metadata.type === 'query' && metadata.data !== undefined && metadata.metatype !== Array && value !== undefined && typeof value !== 'string') {
      throw validationProblem({ [metadata.data]: 'must be given once, as a plain value' });
    }
    if (metadata.type === 'body' || metadata.type === 'query' || metadata.type === 'param') {
      const unsafe = findUnsafeText(value, metadata.data ?? '');
      if (Object.keys(unsafe).length > 0) throw validationProblem(unsafe);
    }
    const out = await super.transform(value, metadata);
    if (metadata.type === 'body') {
      const nulls = findUndeclaredNulls(out, metadata.data ?? '');
      if (Object.keys(nulls).length > 0) throw validationProblem(nulls);
    }
    return out;
  }
}

/** class-validator's checks that a plain test decides exactly: the pipe's verdict is "valid" when the test passes. */
const PLAIN_CHECKS: Readonly<Record<string, (value: unknown, constraints: readonly unknown[]) => boolean>> = {
  isString: (v) => typeof v === 'string',
  // .length counts a surrogate pair twice and MaxLength once: within this bound, within MaxLength's.
  maxLength: (v, [max]) => typeof v === 'string' && v.length <= (max as number),
  isObject: (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
  isBoolean: (v) => typeof v === 'boolean',
};

/** Property types class-transformer hands over as they are (no nested DTO to build). */
const PLAIN_TYPES: ReadonlySet<unknown> = new Set([String, Boolean, Number, Object]);

/** The keys class-transformer leaves out of the DTO it builds. */
const STRIPPED_KEYS: ReadonlySet<string> = new Set(['__proto__', 'prototype', 'constructor']);

interface PlainField {
  optional: boolean;
  checks: Array<[(value: unknown, constraints: readonly unknown[]) => boolean, readonly unknown[]]>;
}

/** class-transformer's decorators (@Type, @Transform, @Expose, @Exclude) on a DTO's property, which a plain check cannot follow. */
interface TransformerMetadata {
  findTransformMetadatas(target: unknown, property: string, type: number): unknown[];
  findTypeMetadata(target: unknown, property: string): unknown;
  findExposeMetadata(target: unknown, property: string): unknown;
  findExcludeMetadata(target: unknown, property: string): unknown;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const transformerMetadata = (require('class-transformer/cjs/storage') as { defaultMetadataStorage: TransformerMetadata }).defaultMetadataStorage;

/**
 * The fields of a DTO whose every rule a plain check decides, or undefined when any is beyond one
 * (a nested DTO, a default value, a transform, a rule not in PLAIN_CHECKS).
 */
function plainFields(metatype: Type<unknown>): Map<string, PlainField> | undefined {
  const defaults = new (metatype as new () => object)();
  if (Object.values(defaults).some((v) => v !== undefined)) return undefined;
  const fields = new Map<string, PlainField>();
  for (const m of getMetadataStorage().getTargetValidationMetadatas(metatype, '', true, false)) {
    const property = m.propertyName;
    let field = fields.get(property);
    if (field === undefined) {
      const type: unknown = Reflect.getMetadata('design:type', metatype.prototype as object, property);
      if (!PLAIN_TYPES.has(type)) return undefined;
      if (
        transformerMetadata.findTransformMetadatas(metatype, property, 0).length > 0 ||
        transformerMetadata.findTypeMetadata(metatype, property) !== undefined ||
        transformerMetadata.findExposeMetadata(metatype, property) !== undefined ||
        transformerMetadata.findExcludeMetadata(metatype, property) !== undefined
      ) {
        return undefined;
      }
      fields.set(property, (field = { optional: false, checks: [] }));
    }
    const check = PLAIN_CHECKS[m.name ?? ''];
    if (m.each || (m.groups?.length ?? 0) > 0) return undefined;
    if (m.type === 'conditionalValidation' && m.name === 'isOptional') field.optional = true;
    else if (m.type === 'customValidation' && check !== undefined) field.checks.push([check, m.constraints ?? []]);
    else return undefined;
  }
  return fields;
}

function hasStrippedKey(value: unknown, depth: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (depth > MAX_JSON_DEPTH) return true;
  if (Array.isArray(value)) return value.some((v) => hasStrippedKey(v, depth + 1));
  for (const key in value) {
    if (STRIPPED_KEYS.has(key) || hasStrippedKey((value as Record<string, unknown>)[key], depth + 1)) return true;
  }
  return false;
}

/**
 * The body as StrictValidationPipe would hand it to a handler, when that is certain from plain
 * checks of the DTO's own rules (known fields of the right types, no null, no text Postgres cannot
 * hold, no key the transformer would strip); undefined otherwise, and the pipe decides (and words its
 * 422). For hot routes: the pipe's class-transformer and class-validator cost about a tenth of a
 * flag evaluation. A DTO with rules beyond PLAIN_CHECKS always goes to the pipe.
 */
export function plainBodyAcceptor<T>(metatype: Type<T> | ObjectConstructor): (body: unknown) => T | undefined {
  const isObject = (body: unknown): body is Record<string, unknown> => typeof body === 'object' && body !== null && !Array.isArray(body);
  const safe = (body: Record<string, unknown>): T | undefined => (Object.keys(findUnsafeText(body)).length > 0 ? undefined : (body as T));
  // A free-form body: the pipe checks that it is an object of safe text, and transforms nothing.
  if (metatype === Object) return (body) => (isObject(body) ? safe(body) : undefined);
  const fields = plainFields(metatype as Type<T>);
  if (fields === undefined) return () => undefined;
  return (body) => {
    if (!isObject(body)) return undefined;
    for (const key in body) if (!fields.has(key)) return undefined;
    for (const [name, field] of fields) {
      const value = body[name];
      if (value === undefined) {
        if (field.optional) continue;
        return undefined;
      }
      if (value === null) return undefined;
      for (const [check, constraints] of field.checks) if (!check(value, constraints)) return undefined;
    }
    return hasStrippedKey(body, 0) ? undefined : safe(body);
  };
}

/** A lean route's body validation: the app's pipe, ahead of it plainBodyAcceptor where that decides. */
export function bodyValidator<T>(metatype: Type<T> | ObjectConstructor): (body: unknown) => T | Promise<T> {
  const pipe = new StrictValidationPipe();
  const accept = plainBodyAcceptor<T>(metatype);
  const metadata: ArgumentMetadata = { type: 'body', metatype, data: undefined };
  return (body) => accept(body) ?? (pipe.transform(body, metadata) as Promise<T>);
}
