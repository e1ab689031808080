import { nextPageUrl, parseLinkHeader } from './link-header';

describe('parseLinkHeader', () => {
  it('reads the API\'s next link', () => {
    expect(parseLinkHeader('</api/flags?limit=2&cursor=WyIyMDI2Il0>; rel="next"')).toEqual([
      { target: '/api/flags?limit=2&cursor=WyIyMDI2Il0', rel: ['next'], params: { rel: 'next' } },
    ]);
  });

  it('reads several links, unquoted and multi-valued rels, and other parameters', () => {
    const links = parseLinkHeader('<https://a.example/p?x=1,2>; rel=prev; title="a, b; c", <https://a.example/n>; REL="next last"');
    expect(links.map((l) => [l.target, l.rel])).toEqual([
      ['https://a.example/p?x=1,2', ['prev']],
      ['https://a.example/n', ['next', 'last']],
    ]);
    expect(links[0].params['title']).toBe('a, b; c');
  });

  it('keeps the first of a repeated parameter (RFC 8288 section 3)', () => {
    expect(parseLinkHeader('</a>; rel="next"; rel="prev"')[0].rel).toEqual(['next']);
  });

  it('unescapes quoted-pairs', () => {
    expect(parseLinkHeader('</a>; rel="next"; title="say \\"hi\\""')[0].params['title']).toBe('say "hi"');
  });

  it('skips malformed entries and keeps the good ones', () => {
    expect(parseLinkHeader('garbage, </b>; rel="next"').map((l) => l.target)).toEqual(['/b']);
    expect(parseLinkHeader('</a>; rel="next" junk, </b>; rel="prev"').map((l) => l.target)).toEqual(['/a', '/b']);
    expect(parseLinkHeader('<unterminated; rel="next"')).toEqual([]);
  });

  it('is empty without a header', () => {
    expect(parseLinkHeader(null)).toEqual([]);
    expect(parseLinkHeader('')).toEqual([]);
  });
});

describe('nextPageUrl', () => {
  it('resolves a relative next link against the URL of the page that carried it', () => {
    expect(nextPageUrl('</api/flags?limit=2&cursor=abc>; rel="next"', 'http://127.0.0.1:3000/api/flags?limit=2')).toBe(
      'http://127.0.0.1:3000/api/flags?limit=2&cursor=abc',
    );
  });

  it('ignores links of other relations, and answers undefined on the last page', () => {
    expect(nextPageUrl('</api/flags?cursor=abc>; rel="prev"', 'http://h/api/flags')).toBeUndefined();
    expect(nextPageUrl(null, 'http://h/api/flags')).toBeUndefined();
  });
});
