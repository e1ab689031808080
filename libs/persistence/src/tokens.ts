/** Injection token of the app's TypeORM DataSource. */
export const DATA_SOURCE = Symbol('DATA_SOURCE');
