import { Module } from '@nestjs/common';
import { UsageController } from './usage.controller';
import { UsageExportRepository, UsageRepository } from '@flagship/ledger';
import { UsageExportService } from './usage-export.service';
import { UsageService } from './usage.service';

@Module({ controllers: [UsageController], providers: [UsageRepository, UsageService, UsageExportRepository, UsageExportService] })
export class UsageModule {}
