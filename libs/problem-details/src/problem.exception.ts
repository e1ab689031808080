import { HttpException } from '@nestjs/common';
import { type ProblemType, problemTypeUri } from './problem-types';

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance?: string;
  errors?: Record<string, string>;
  [extension: string]: unknown;
}

/**
 * The one exception the apps throw for an answer that is not a success. The filter turns it into
 * `application/problem+json`; `headers` are set on the response (Retry-After, WWW-Authenticate...).
 */
export class ProblemException extends HttpException {
  constructor(
    readonly problem: ProblemType,
    readonly detail: string,
    readonly extensions: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super({ type: problemTypeUri(problem.slug), title: problem.title, status: problem.status, detail }, problem.status);
  }

  toBody(instance: string | undefined): ProblemBody {
    return {
      type: problemTypeUri(this.problem.slug),
      title: this.problem.title,
      status: this.problem.status,
      detail: this.detail,
      ...(instance ? { instance } : {}),
      ...this.extensions,
    };
  }
}
