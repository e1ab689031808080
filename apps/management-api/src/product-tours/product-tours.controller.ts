import { Body, Controller, Get, Param, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import type { TenantEntity } from '@flagship/persistence';
import { CurrentTenant, CurrentUser, TenantAccess } from '../auth/auth.decorators';
import type { UserEntity } from '../users/user.entity';
import { ProductTourStatusDto, PutProductTourDto } from './product-tours.dto';
import { ProductToursService } from './product-tours.service';

@ApiTags('product tours')
@ApiBearerAuth('bearer')
@TenantAccess({ role: 'viewer' })
@Controller('v1/users/:userId/product-tours')
export class ProductToursController {
  constructor(private readonly tours: ProductToursService) {}

  @Get(':tourKey')
  @ApiOkResponse({ type: ProductTourStatusDto })
  get(@Param('userId') userId: string, @Param('tourKey') tourKey: string, @CurrentTenant() tenant: TenantEntity, @CurrentUser() user: UserEntity) {
    return this.tours.get(tenant.id, user, userId, tourKey);
  }

  @Put(':tourKey')
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
