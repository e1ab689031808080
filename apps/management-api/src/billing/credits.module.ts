import { Module } from '@nestjs/common';
import { BudgetsRepository, CreditsRepository, LowBalanceRepository } from '@flagship/ledger';
import { BudgetsController } from './budgets.controller';
import { BudgetsService } from './budgets.service';
import { CreditsController } from './credits.controller';
import { CreditsService } from './credits.service';
import { LowBalanceController } from './low-balance.controller';
import { LowBalanceService } from './low-balance.service';

@Module({
  controllers: [CreditsController, LowBalanceController, BudgetsController],
  providers: [CreditsRepository, CreditsService, LowBalanceRepository, LowBalanceService, BudgetsRepository, BudgetsService],
})
export class CreditsModule {}
