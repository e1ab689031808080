export * from './stripe.env';
export * from './stripe-api';
export * from './plans';
export * from './billing.repository';
export * from './customers';
export * from './billing.repository.fake';
