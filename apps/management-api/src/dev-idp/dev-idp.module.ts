import { type DynamicModule, Module } from '@nestjs/common';
import { DevIdpController } from './dev-idp.controller';
import { DevIdpRepository } from './dev-idp.repository';
import { DevIdpService } from './dev-idp.service';

@Module({})
export class DevIdpModule {
  /** The controller is mounted only in dev mode; the service is always there for the ID-token verifier to find. */
  static forMode(mode: string): DynamicModule {
    return {
      module: DevIdpModule,
      controllers: mode === 'dev' ? [DevIdpController] : [],
      providers: [DevIdpRepository, DevIdpService],
      exports: [DevIdpService],
    };
  }
}
