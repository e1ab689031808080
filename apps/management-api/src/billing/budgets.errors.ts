import { HttpStatus } from '@nestjs/common';
import { registerProblemTypes } from '@flagship/problem-details';

export const BudgetProblems = registerProblemTypes({
  'budget-not-found': { status: HttpStatus.NOT_FOUND, title: 'Budget not found' },
  'product-key-not-found': { status: HttpStatus.NOT_FOUND, title: 'Product key not found' },
});
