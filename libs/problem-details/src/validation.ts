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
    return super.transform(value, metadata);
  }
}
