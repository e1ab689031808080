/** See unknown-fields.js. */
export function unknownFields(Model: new (o: Record<string, any>) => { validate(): void }, o: Record<string, any>): string[];
