import { Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '@flagship/problem-details';
import { CurrentEmail, CurrentUser, UsersOnly, type VerifiedEmail } from '../auth/auth.decorators';
import type { UserEntity } from '../users/user.entity';
import { InvitationsService } from './invitations.service';
import { InvitationDto } from './tenants.dto';

/** The signed-in user's side of invitations: those naming their verified e-mail. */
@ApiTags('invitations')
@ApiBearerAuth('bearer')
@ApiErrors(401, 403, 429, 503)
@UsersOnly()
@Controller('api/invitations')
export class InvitationsController {
  constructor(private readonly invitations: InvitationsService) {}

  @Get()
  @ApiOperation({ summary: "The caller's pending invitations (403 email-not-verified while the identity provider has not verified the e-mail)" })
  @ApiOkResponse({ type: [InvitationDto] })
  list(@CurrentEmail() email: VerifiedEmail | undefined) {
    return this.invitations.mine(email);
  }

  @Post(':invitationId/accept')
  @HttpCode(200)
  @ApiOperation({ summary: 'Accept an invitation: join its tenant with its role (the tenant a request without X-Tenant-ID acts in does not change)' })
  @ApiErrors(404)
  @ApiOkResponse({ type: InvitationDto })
  accept(@CurrentUser() user: UserEntity, @CurrentEmail() email: VerifiedEmail | undefined, @Param('invitationId') invitationId: string) {
    return this.invitations.accept(user, email, invitationId);
  }

  @Post(':invitationId/decline')
  @HttpCode(200)
  @ApiOperation({ summary: 'Decline an invitation' })
  @ApiErrors(404)
  @ApiOkResponse({ type: InvitationDto })
  decline(@CurrentEmail() email: VerifiedEmail | undefined, @Param('invitationId') invitationId: string) {
    return this.invitations.decline(email, invitationId);
  }
}
