import { type CanActivate, type ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { acceptsMediaType, BodyRefusals, declaresBody, mediaTypeOf } from './body-rules';

const CONSUMES = 'problem-details:consumes';
const DEFAULT_TYPES = ['application/json'];

/** Media types a handler accepts for its body; without it, JSON only. */
export const Consumes = (...mediaTypes: string[]): MethodDecorator & ClassDecorator => SetMetadata(CONSUMES, mediaTypes);

/** Refuses a body of another media type with 415 before validation can mistake it for a missing body. */
@Injectable()
export class ContentTypeGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() !== 'http') return true;
    const req = context.switchToHttp().getRequest<Request>();
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'DELETE' || req.method === 'OPTIONS') return true;
    if (!declaresBody(req.headers)) return true;
    const accepted = this.reflector.getAllAndOverride<string[] | undefined>(CONSUMES, [context.getHandler(), context.getClass()]) ?? DEFAULT_TYPES;
    const mediaType = mediaTypeOf(req.headers['content-type']);
    if (!acceptsMediaType(mediaType, accepted)) throw BodyRefusals.mediaType(mediaType, accepted);
    return true;
  }
}
