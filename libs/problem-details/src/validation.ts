import { type ArgumentMetadata, Injectable, ValidationPipe, type ValidationError } from '@nestjs/common';
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
