import { Controller, Get, Headers, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { ApiErrors } from '@flagship/problem-details';
import { CurrentPrincipal, TenantAccess } from '../auth/auth.decorators';
import type { TenantPrincipal } from '../auth/tenant-access.resolver';
import { FLAG_STREAM_ACCESS, FlagStreams } from './flag-streams';

@ApiTags('flags')
@ApiBearerAuth('bearer')
@Controller('api/flag-stream')
export class FlagStreamController {
  constructor(private readonly streams: FlagStreams) {}

  @Get()
  @TenantAccess(FLAG_STREAM_ACCESS)
  @ApiOperation({
    summary: "Stream the environment's flag definitions (Server-Sent Events), for SDKs that evaluate in process",
    description:
      'Events: `put` first, data `{"flags": [FlagDefinitionDto...], "segments": [SegmentDefinition...]}`: every flag of the environment in the evaluator\'s form (as in GET /api/flags/export) and every segment (key, name, included, excluded, includedContexts, excludedContexts, rules, salt, version); then `patch`, ' +
      'data `{"flags": [FlagDefinitionDto...], "segments"?: [SegmentDefinition...]}`: the flags and segments that changed, and `delete`, data `{"keys": [string...], "segmentKeys"?: [string...]}`: the flags and segments removed, as changes land (bursts coalesced); ' +
      'a comment line (`:`) after the put or the replay, and every FLAG_STREAM_HEARTBEAT_SECONDS. The put is bounded by the flag quotas (QUOTA_FLAGS_PER_TENANT, QUOTA_FLAG_BYTES_PER_TENANT) and by FLAG_SET_MAX_BYTES (past it 409 flag-set-too-large); a flag over FLAG_MAX_BYTES is not sent. ' +
      'Every event has an id; a reconnect sending it as Last-Event-ID gets only the events after it when this server still holds them, else a fresh `put`. ' +
      'A stream lasts only while its caller has access: it ends the moment a member is removed, an OAuth client deleted or its tenant changes so that access is refused, ' +
      'at the token\'s expiry, and after FLAG_STREAM_MAX_AGE_SECONDS; the server then sends `end`, data `{"reason": "access-withdrawn" | "credential-expired" | "max-age" | "shed" | "shutdown"}`, and closes it ' +
      '(reconnect with a current token and Last-Event-ID: a caller without access is refused). A client that leaves more than FLAG_STREAM_MAX_BUFFER_BYTES unread is cut off. ' +
      'Per server: a tenant holds at most its plan\'s stream allowance (FLAG_STREAMS_PER_TENANT_FREE, _STANDARD, _PREMIUM), a person FLAG_STREAMS_PER_USER across their tenants, ' +
      'an OAuth client FLAG_STREAMS_PER_CLIENT, a client address (an IPv6 /64) FLAG_STREAMS_PER_ADDRESS (429 too-many-flag-streams, `per` naming the bound), ' +
      'and the server FLAG_STREAMS_PER_PROCESS (503): when it is full, a paid plan\'s stream is admitted in place of the newest free plan\'s stream, which ends with reason `shed`.',
  })
  @ApiHeader({ name: 'X-Tenant-ID', required: false, description: 'required for users' })
  @ApiHeader({ name: 'X-Environment', required: false, description: 'environment key, default production' })
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'the id of the last event received, to resume' })
  @ApiQuery({ name: 'environment', required: false, type: String, description: 'environment key, instead of X-Environment' })
  @ApiOkResponse({
    description: 'the event stream: `put`, then `patch` and `delete` events (see the description)',
    content: { 'text/event-stream': { schema: { type: 'string', example: 'id: Xk3f9a:0\nevent: put\ndata: {"flags":[...]}\n\n' } } },
  })
  @ApiErrors(400, 401, 403, 404, 409, 429, 503)
  stream(
    @CurrentPrincipal() principal: TenantPrincipal,
    @Query('environment') environment: string | undefined,
    @Headers('x-environment') env: string | undefined,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    return this.streams.open(principal, typeof environment === 'string' ? environment : env, lastEventId, req, res);
  }
}
