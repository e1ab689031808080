import { Module } from '@nestjs/common';
import { UsageController } from './usage.controller';
import { UsageRepository } from '@flagship/ledger';
import { UsageService } from './usage.service';

@Module({ controllers: [UsageController], providers: [UsageRepository, UsageService] })
export class UsageModule {}
