import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { TenantEntity } from '@flagship/persistence';
import type { UserEntity } from '../users/user.entity';
import { ApiErrors, BODY_ERRORS } from '@flagship/problem-details';
import { CurrentTenant, CurrentUser, OptionalHeader, TenantAccess } from '../auth/auth.decorators';
import { BillingSessionDto, CheckoutDto } from './checkout.dto';
import { CheckoutService } from './checkout.service';
import { PortalDto } from './portal.dto';
import { PortalService } from './portal.service';
import { SubscriptionDto } from './subscription.dto';
import { SubscriptionService } from './subscription.service';

/** Checkout, customer portal and plan subscription (the seed's Billing section); tenant admins only. */
@ApiTags('billing')
@ApiBearerAuth('bearer')
@ApiErrors(401, 403, 429, 503)
@Controller('api/billing')
export class StripeBillingController {
  constructor(
    private readonly checkouts: CheckoutService,
    private readonly portals: PortalService,
    private readonly subscriptions: SubscriptionService,
  ) {}

  @Post('checkout')
  @HttpCode(200)
  @TenantAccess({ role: 'admin', headerRequired: true })
  @ApiHeader({ name: 'X-Tenant-ID', required: true })
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'recommended; also passed on to Stripe' })
  @ApiOperation({ summary: 'Start a plan checkout (or, with a live subscription, a portal plan-change confirmation), or a credit purchase' })
  @ApiOkResponse({ type: BillingSessionDto })
  @ApiErrors(...BODY_ERRORS, 502)
  checkout(
    @CurrentTenant() tenant: TenantEntity,
    @Body() dto: CheckoutDto,
    @CurrentUser() user: UserEntity | undefined,
    @OptionalHeader('idempotency-key') idempotencyKey?: string,
  ) {
    return this.checkouts.checkout(tenant, dto, idempotencyKey, user?.id ?? null);
  }

  @Post('portal')
  @HttpCode(200)
  @TenantAccess({ role: 'admin' })
  @ApiHeader({ name: 'X-Tenant-ID', required: false })
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'also passed on to Stripe' })
  @ApiOperation({ summary: "Open the Stripe customer portal for the tenant's customer of a product key (default core)" })
  @ApiOkResponse({ type: BillingSessionDto })
  @ApiErrors(...BODY_ERRORS, 502)
  portal(@CurrentTenant() tenant: TenantEntity, @Body() dto: PortalDto, @OptionalHeader('idempotency-key') idempotencyKey?: string) {
    return this.portals.portal(tenant, dto, idempotencyKey);
  }

  @Get('subscription')
  @TenantAccess({ role: 'admin' })
  @ApiHeader({ name: 'X-Tenant-ID', required: false })
  @ApiOperation({ summary: "The tenant's plan subscription, as last synced from Stripe" })
  @ApiOkResponse({ type: SubscriptionDto })
  subscription(@CurrentTenant() tenant: TenantEntity) {
    return this.subscriptions.get(tenant);
  }
}
