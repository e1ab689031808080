import { Module } from '@nestjs/common';
import { CreditsController } from './credits.controller';
import { CreditsRepository } from '@flagship/ledger';
import { CreditsService } from './credits.service';

@Module({ controllers: [CreditsController], providers: [CreditsRepository, CreditsService] })
export class CreditsModule {}
