import { Module } from '@nestjs/common';
import { UsageController } from './usage.controller';
import { UsageExportRepository, UsageRepository } from '@flagship/ledger';
import { UsageExportService } from './usage-export.service';
import { UsageService } from './usage.service';
import { APP_CONFIG } from '@flagship/config';
import type { ManagementApiConfig } from '../env.schema';
import { UsageExportAdmission } from './usage-export-admission';

const admission = {
  provide: UsageExportAdmission,
  inject: [APP_CONFIG],
  useFactory: (c: ManagementApiConfig) =>
    new UsageExportAdmission({ perTenant: c.USAGE_EXPORTS_PER_TENANT, perCaller: c.USAGE_EXPORTS_PER_CALLER, perProcess: c.USAGE_EXPORTS_PER_PROCESS }),
};

@Module({ controllers: [UsageController], providers: [UsageRepository, UsageService, UsageExportRepository, UsageExportService, admission] })
export class UsageModule {}
