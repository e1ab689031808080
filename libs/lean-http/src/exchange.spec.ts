import { etagMatches, isJsonContentType } from './exchange';

describe('isJsonContentType', () => {
  it.each([
    ['application/json', true],
    ['application/json; charset=utf-8', true],
    ['Application/JSON;charset="UTF-8"', true],
    ['application/vnd.ofrep+json', true],
    ['application/problem+json; charset=utf8', true],
    ['application/json; charset=latin1', false],
    ['application/jsonx', false],
    ['text/json', false],
    ['text/plain', false],
    [undefined, false],
  ])('%s -> %s', (type, expected) => {
    expect(isJsonContentType(type)).toBe(expected);
  });
});

describe('etagMatches', () => {
  const etag = '"abc"';
  it.each([
    [undefined, false],
    ['"abc"', true],
    ['W/"abc"', true],
    ['"x", "abc"', true],
    ['*', true],
    ['"abcd"', false],
    ['abc', false],
  ])('If-None-Match %s -> %s', (header, expected) => {
    expect(etagMatches(header, etag)).toBe(expected);
  });
});
