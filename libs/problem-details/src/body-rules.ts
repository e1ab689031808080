import { exceedsJsonDepth, MAX_JSON_DEPTH } from './json-depth';
import { ProblemException } from './problem.exception';
import { CommonProblems } from './problem-types';

/**
 * The rules every JSON request body meets (CONTRACT.md section 4), in one place for both readers of
 * bodies: Express' body-parser with the ContentTypeGuard (service-kit's bootstrap) and the lean HTTP
 * layer (libs/lean-http). Unknown fields and text Postgres cannot hold are the validation pipe's
 * (validation.ts), which both use too.
 */

/** 1 MiB. */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/** body-parser's `type` option: application/json and every application/*+json. */
export const JSON_MEDIA_TYPES = ['application/json', 'application/*+json'];

const JSON_SUFFIX_TYPE = /^application\/[a-z0-9.+-]+\+json$/;

/** The media type of a Content-Type header, lower-cased, without its parameters ('' for none). */
export function mediaTypeOf(contentType: string | undefined): string {
  if (contentType === undefined) return '';
  const semicolon = contentType.indexOf(';');
  return (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
}

/** Whether a media type (mediaTypeOf) is one `accepted` names; 'application/json' takes every application/*+json too. */
export function acceptsMediaType(mediaType: string, accepted: readonly string[] = ['application/json']): boolean {
  return accepted.some((t) => t === mediaType || (t === 'application/json' && JSON_SUFFIX_TYPE.test(mediaType)));
}

/** Whether a request declares a body (a length other than 0, or a chunked one). */
export function declaresBody(headers: { 'content-length'?: string; 'transfer-encoding'?: string }): boolean {
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** The refusals of a body, worded once. */
export const BodyRefusals = {
  tooLarge: (limit: number): ProblemException =>
    new ProblemException(CommonProblems['payload-too-large'], `The request body exceeds the limit of ${limit} bytes.`),
  /** `note` says more of what is accepted (the lean layer reads UTF-8 only). */
  mediaType: (mediaType: string, accepted: readonly string[] = ['application/json'], note = ''): ProblemException =>
    new ProblemException(
      CommonProblems['unsupported-media-type'],
      `Content-Type ${mediaType === '' ? '(none)' : mediaType} is not accepted here; send ${accepted.join(' or ')}${note}.`,
      {},
      { Accept: accepted.join(', ') },
    ),
  encoding: (coding: string): ProblemException =>
    new ProblemException(
      CommonProblems['unsupported-media-type'],
      `Content-Encoding ${coding.slice(0, 40)} is not accepted here; send the body uncompressed or as gzip, deflate or br.`,
      {},
      { 'Accept-Encoding': 'gzip, deflate, br' },
    ),
  unreadable: (): ProblemException =>
    new ProblemException(CommonProblems['bad-request'], 'The request body could not be read: it is not valid data of its Content-Encoding.'),
  tooDeep: (): ProblemException =>
    new ProblemException(CommonProblems['json-too-deep'], `The request body nests arrays or objects deeper than ${MAX_JSON_DEPTH} levels.`),
  malformed: (): ProblemException => new ProblemException(CommonProblems['malformed-json'], 'The request body is not valid JSON.'),
};

/**
 * Throws json-too-deep for JSON text nested deeper than MAX_JSON_DEPTH: checked on the raw text,
 * before parsing, since what runs on the parsed value recurses.
 */
export function refuseDeepJson(text: string): void {
  if (text.length > MAX_JSON_DEPTH && exceedsJsonDepth(text)) throw BodyRefusals.tooDeep();
}

/** What body-parser's strict mode takes at the top level: an object or an array. */
const OBJECT_OR_ARRAY = /^[\s]*[{[]/;

/**
 * A JSON body's text parsed as body-parser (strict) parses it: undefined for no body, json-too-deep
 * past MAX_JSON_DEPTH, malformed-json for anything but an object or array or for invalid JSON.
 */
export function parseJsonBody(text: string): unknown {
  if (text === '') return undefined;
  refuseDeepJson(text);
  if (!OBJECT_OR_ARRAY.test(text)) throw BodyRefusals.malformed();
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw BodyRefusals.malformed();
  }
}
