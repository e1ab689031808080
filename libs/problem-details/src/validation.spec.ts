import 'reflect-metadata';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { findUndeclaredNulls, findUnsafeText } from './validation';

describe('findUnsafeText', () => {
  it('names every string holding NUL or an unpaired surrogate, nested and in keys', () => {
    const found = findUnsafeText({ ok: 'fine é 😀', a: 'x\u0000', list: ['y', 'z\ud800'], deep: { low: '\udc00z', ['k\u0000']: 1 } });
    expect(Object.keys(found).sort()).toEqual(['a', 'deep.k\u0000', 'deep.low', 'list[1]']);
  });

  it('accepts paired surrogates and plain text, and labels a bare value by the parameter name', () => {
    expect(findUnsafeText({ emoji: '\ud83d\ude00', text: 'tab\tnewline\n' })).toEqual({});
    expect(findUnsafeText('a\u0000', 'flagKey')).toEqual({ flagKey: expect.stringMatching(/NUL/) });
  });
});

class Inner {
  @ApiProperty() name: string | null;
}

class Outer {
  @ApiPropertyOptional() title?: string | null;
  @ApiPropertyOptional({ nullable: true, type: String }) projectId?: string | null;
  @ApiPropertyOptional({ type: [Inner] }) items?: Inner[];
  free?: Record<string, unknown>;
}

describe('findUndeclaredNulls', () => {
  it('refuses null where the OpenAPI metadata does not say nullable, in nested DTOs too', () => {
    const inner = Object.assign(new Inner(), { name: null });
    const dto = Object.assign(new Outer(), { title: null, projectId: null, items: [inner], free: { anything: null } });
    expect(findUndeclaredNulls(dto)).toEqual({ title: 'must not be null', 'items[0].name': 'must not be null' });
  });
});
