import { Module } from '@nestjs/common';
import { CreditsRepository, LowBalanceRepository } from '@flagship/ledger';
import { CreditsController } from './credits.controller';
import { CreditsService } from './credits.service';
import { LowBalanceController } from './low-balance.controller';
import { LowBalanceService } from './low-balance.service';

@Module({ controllers: [CreditsController, LowBalanceController], providers: [CreditsRepository, CreditsService, LowBalanceRepository, LowBalanceService] })
export class CreditsModule {}
