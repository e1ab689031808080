import { Injectable } from '@nestjs/common';
import { CreditBalances } from '@flagship/ledger';

export interface CreditsView {
  balance: number;
  reserved: number;
}

/** What a tenant can spend on the AI gateway (CONTRACT.md section 7), in micro-credits. */
@Injectable()
export class CreditsService {
  constructor(private readonly repo: CreditBalances) {}

  /** A tenant that was never granted credits has a row of nothing, not a 404. */
  async balance(tenantId: string): Promise<CreditsView> {
    const row = await this.repo.balanceOf(tenantId);
    return { balance: row?.balance ?? 0, reserved: row?.reserved ?? 0 };
  }
}
