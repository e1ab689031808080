import { Module } from '@nestjs/common';
import { Budgets, BudgetsRepository, CreditBalances, CreditsRepository, LowBalanceAlerts, LowBalanceRepository } from '@flagship/ledger';
import { BudgetsController } from './budgets.controller';
import { BudgetsService } from './budgets.service';
import { CreditsController } from './credits.controller';
import { CreditsService } from './credits.service';
import { LowBalanceController } from './low-balance.controller';
import { LowBalanceService } from './low-balance.service';

@Module({
  controllers: [CreditsController, LowBalanceController, BudgetsController],
  // The services ask for the ports (libs/ledger's abstract classes); their unit specs hand them in-memory twins.
  providers: [
    CreditsRepository,
    { provide: CreditBalances, useExisting: CreditsRepository },
    { provide: LowBalanceAlerts, useClass: LowBalanceRepository },
    { provide: Budgets, useClass: BudgetsRepository },
    CreditsService,
    LowBalanceService,
    BudgetsService,
  ],
})
export class CreditsModule {}
