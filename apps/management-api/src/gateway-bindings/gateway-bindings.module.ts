import { Module } from '@nestjs/common';
import { EnvironmentsModule } from '../environments/environments.module';
import { FlagsModule } from '../flags/flags.module';
import { GatewayBindingsController } from './gateway-bindings.controller';
import { GatewayBindingsRepository, SqlGatewayBindingsRepository } from './gateway-bindings.repository';
import { GatewayBindingsService } from './gateway-bindings.service';

@Module({
  imports: [EnvironmentsModule, FlagsModule],
  controllers: [GatewayBindingsController],
  providers: [{ provide: GatewayBindingsRepository, useClass: SqlGatewayBindingsRepository }, GatewayBindingsService],
})
export class GatewayBindingsModule {}
