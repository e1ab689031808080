import { QueryFailedError } from 'typeorm';
import { dependencyFailureOf } from './dependency-failure';
import { toProblem } from './problem-details.filter';

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code, severity: 'FATAL' });
const socketError = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code, syscall: 'connect' });

describe('dependencyFailureOf', () => {
  it('recognises Postgres unavailable, whether from pg, pg-pool or wrapped by TypeORM', () => {
    for (const err of [
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      new Error('Query read timeout'),
      pgError('57P01', 'terminating connection due to administrator command'),
      pgError('57P03', 'the database system is starting up'),
      pgError('53300', 'sorry, too many clients already'),
      pgError('08006', 'connection failure'),
      pgError('57014', 'canceling statement due to statement timeout'),
      new QueryFailedError('SELECT 1', [], new Error('Connection terminated unexpectedly')),
      new QueryFailedError('SELECT 1', [], pgError('57P01', 'terminating connection')),
      new Error('pool', { cause: new Error('Connection terminated due to connection timeout') }),
    ]) {
      expect([err.message, dependencyFailureOf(err)?.dependency]).toEqual([err.message, 'postgres']);
    }
  });

  it('recognises Redis unavailable as ioredis reports it', () => {
    for (const message of [
      "Stream isn't writeable and enableOfflineQueue options is false",
      'Reached the max retries per request limit (which is 1). Refer to "maxRetriesPerRequest" option for details.',
      'Connection is closed.',
      'Command timed out',
    ]) {
      expect(dependencyFailureOf(new Error(message))?.dependency).toBe('redis');
    }
  });

  it('names no store for a bare socket error, but still counts it as one down', () => {
    expect(dependencyFailureOf(socketError('ECONNREFUSED'))).toEqual({ dependency: undefined, reason: expect.stringContaining('ECONNREFUSED') });
    expect(dependencyFailureOf(socketError('ECONNRESET'))).toBeDefined();
  });

  it('leaves real bugs alone: constraint violations, syntax errors, plain errors, non-errors', () => {
    for (const err of [
      new QueryFailedError('INSERT', [], Object.assign(new Error('duplicate key'), { code: '23505', severity: 'ERROR' })),
      Object.assign(new Error('invalid input syntax for type uuid'), { code: '22P02', severity: 'ERROR' }),
      new TypeError('Cannot read properties of undefined'),
      'a string',
      null,
    ]) {
      expect(dependencyFailureOf(err)).toBeUndefined();
    }
  });

  it('is answered as a 503 problem with Retry-After; a bug stays a 500', () => {
    const down = toProblem(new Error('Connection terminated unexpectedly'));
    expect([down.problem.status, down.problem.slug, down.headers['Retry-After']]).toEqual([503, 'service-unavailable', '2']);
    expect(toProblem(new TypeError('x')).problem.status).toBe(500);
  });
});
