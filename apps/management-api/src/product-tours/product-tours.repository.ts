import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';
import { ProductTourEntity } from './product-tour.entity';

@Injectable()
export class ProductToursRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  /** The tour's status, created (not completed) on first sight so its timestamps stay stable. */
  async getOrCreate(tenantId: string, userId: string, tourKey: string): Promise<ProductTourEntity> {
    await this.ds.query(
      `INSERT INTO product_tours (tenant_id, user_id, tour_key) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
      [tenantId, userId, tourKey],
    );
    return (await this.ds.getRepository(ProductTourEntity).findOneBy({ tenantId, userId, tourKey }))!;
  }

  /** Sets completion; `completed_at` keeps the first completion time until the tour is reset. */
  async setCompleted(tenantId: string, userId: string, tourKey: string, completed: boolean): Promise<ProductTourEntity> {
    await this.ds.query(
      `INSERT INTO product_tours (tenant_id, user_id, tour_key, completed, completed_at)
       VALUES ($1, $2, $3, $4, CASE WHEN $4 THEN now() END)
       ON CONFLICT (tenant_id, user_id, tour_key) DO UPDATE SET
         completed = EXCLUDED.completed,
         completed_at = CASE WHEN EXCLUDED.completed THEN COALESCE(product_tours.completed_at, now()) END,
         updated_at = now()`,
      [tenantId, userId, tourKey, completed],
    );
    return (await this.ds.getRepository(ProductTourEntity).findOneBy({ tenantId, userId, tourKey }))!;
  }
}
