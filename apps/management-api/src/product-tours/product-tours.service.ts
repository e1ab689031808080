import { Injectable } from '@nestjs/common';
import type { ProductTourStatus } from '@flagship/domain';
import { CommonProblems, ProblemException, validationProblem } from '@flagship/problem-details';
import type { UserEntity } from '../users/user.entity';
import type { ProductTourEntity } from './product-tour.entity';
import { ProductToursRepository } from './product-tours.repository';

const TOUR_KEY = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

const toStatus = (t: ProductTourEntity): ProductTourStatus => ({
  completed: t.completed,
  completed_at: t.completedAt?.toISOString() ?? null,
  created_at: t.createdAt.toISOString(),
  updated_at: t.updatedAt.toISOString(),
});

/** A user's product-tour progress inside the active tenant; nobody reads or writes another's. */
@Injectable()
export class ProductToursService {
  constructor(private readonly repo: ProductToursRepository) {}

  async get(tenantId: string, user: UserEntity, userId: string, tourKey: string): Promise<ProductTourStatus> {
    this.check(user, userId, tourKey);
    return toStatus(await this.repo.getOrCreate(tenantId, user.id, tourKey));
  }

  async put(tenantId: string, user: UserEntity, userId: string, tourKey: string, completed: boolean): Promise<ProductTourStatus> {
    this.check(user, userId, tourKey);
    return toStatus(await this.repo.setCompleted(tenantId, user.id, tourKey, completed));
  }

  private check(user: UserEntity, userId: string, tourKey: string): void {
    if (userId !== 'me' && userId !== user.id) {
      throw new ProblemException(CommonProblems.forbidden, "Product tours are private: use your own user id or 'me'.");
    }
    if (!TOUR_KEY.test(tourKey)) throw validationProblem({ tourKey: 'must be 1-128 letters, digits, dots, dashes or underscores' });
  }
}
