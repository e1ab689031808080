import { Body, Controller, Get, Param, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors, BODY_ERRORS } from '@flagship/problem-details';
import type { TenantEntity } from '@flagship/persistence';
import { CurrentTenant, CurrentUser, TenantAccess } from '../auth/auth.decorators';
import type { UserEntity } from '../users/user.entity';
import { ProductTourStatusDto, PutProductTourDto } from './product-tours.dto';
import { ProductToursService } from './product-tours.service';

@ApiTags('product tours')
@ApiBearerAuth('bearer')
@ApiErrors(401, 403, 404, 429, 503)
@TenantAccess({ role: 'viewer' })
@Controller('v1/users/:userId/product-tours')
export class ProductToursController {
  constructor(private readonly tours: ProductToursService) {}

  @Get(':tourKey')
  @ApiOperation({ summary: "Whether a user has completed a product tour (`me` is the caller)" })
  @ApiErrors(400)
  @ApiOkResponse({ type: ProductTourStatusDto })
  get(@Param('userId') userId: string, @Param('tourKey') tourKey: string, @CurrentTenant() tenant: TenantEntity, @CurrentUser() user: UserEntity) {
    return this.tours.get(tenant.id, user, userId, tourKey);
  }

  @Put(':tourKey')
  @ApiOperation({ summary: 'Mark a product tour completed or not (`me` is the caller)' })
  @ApiErrors(...BODY_ERRORS)
  @ApiOkResponse({ type: ProductTourStatusDto })
  put(
    @Param('userId') userId: string,
    @Param('tourKey') tourKey: string,
    @Body() dto: PutProductTourDto,
    @CurrentTenant() tenant: TenantEntity,
    @CurrentUser() user: UserEntity,
  ) {
    return this.tours.put(tenant.id, user, userId, tourKey, dto.completed);
  }
}
