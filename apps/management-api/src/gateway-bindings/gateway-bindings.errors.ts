import { HttpStatus } from '@nestjs/common';
import { ProblemException, registerProblemTypes } from '@flagship/problem-details';

export const GatewayBindingProblems = registerProblemTypes({
  'gateway-binding-not-found': { status: HttpStatus.NOT_FOUND, title: 'Gateway binding not found' },
  'gateway-binding-changed': { status: HttpStatus.PRECONDITION_FAILED, title: 'The gateway binding changed since it was read' },
});

/** 404 for a product key this tenant has not bound (another tenant's binding reads the same). */
export const bindingNotFound = (productKey: string): ProblemException =>
  new ProblemException(GatewayBindingProblems['gateway-binding-not-found'], `Product key ${productKey} is not bound to a flag in this tenant.`);
