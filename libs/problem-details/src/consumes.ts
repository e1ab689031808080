import { type CanActivate, type ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { ProblemException } from './problem.exception';
import { CommonProblems } from './problem-types';

const CONSUMES = 'problem-details:consumes';
const DEFAULT_TYPES = ['application/json'];

/** Media types a handler accepts for its body; without it, JSON only. */
export const Consumes = (...mediaTypes: string[]): MethodDecorator & ClassDecorator => SetMetadata(CONSUMES, mediaTypes);

function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** Refuses a body of another media type with 415 before validation can mistake it for a missing body. */
@Injectable()
export class ContentTypeGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() !== 'http') return true;
    const req = context.switchToHttp().getRequest<Request>();
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'DELETE' || req.method === 'OPTIONS') return true;
    if (!hasBody(req)) return true;
    const accepted = this.reflector.getAllAndOverride<string[] | undefined>(CONSUMES, [context.getHandler(), context.getClass()]) ?? DEFAULT_TYPES;
    const mediaType = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    const ok = accepted.some((t) => t === mediaType || (t === 'application/json' && /^application\/[a-z0-9.+-]+\+json$/.test(mediaType)));
    if (!ok) {
      throw new ProblemException(
        CommonProblems['unsupported-media-type'],
        `Content-Type ${mediaType === '' ? '(none)' : mediaType} is not accepted here; send ${accepted.join(' or ')}.`,
        {},
        { Accept: accepted.join(', ') },
      );
    }
    return true;
  }
}
