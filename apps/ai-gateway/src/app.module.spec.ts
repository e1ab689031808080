import { withSynchronousCommit } from './app.module';

describe('withSynchronousCommit', () => {
  it('adds the setting to the connection options, keeping what is there', () => {
    expect(new URL(withSynchronousCommit('postgres://u@h:5432/db', 'off')).searchParams.get('options')).toBe('-c synchronous_commit=off');
    const kept = new URL(withSynchronousCommit('postgres://u@h:5432/db?options=-c%20search_path%3Dx&sslmode=disable', 'on'));
    expect([kept.searchParams.get('options'), kept.searchParams.get('sslmode')]).toEqual(['-c search_path=x -c synchronous_commit=on', 'disable']);
  });

  it('leaves a DATABASE_URL that names synchronous_commit itself as it is', () => {
    const url = 'postgres://u@h:5432/db?options=-c%20synchronous_commit%3Don';
    expect(withSynchronousCommit(url, 'off')).toBe(url);
  });
});
