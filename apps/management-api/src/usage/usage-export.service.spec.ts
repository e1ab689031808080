import { csvCell, csvLine } from './usage-export.service';

describe('the usage export CSV (RFC 4180, formula-safe)', () => {
  it.each([
    [null, ''],
    ['', ''],
    ['gpt-4o-mini', 'gpt-4o-mini'],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['two\r\nlines', '"two\r\nlines"'],
    ['lf\nonly', '"lf\nonly"'],
    ['=1+1', "'=1+1"],
    ['+1', "'+1"],
    ['-cmd', "'-cmd"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['\t=1', "'\t=1"],
    ['\r=1', `"'\r=1"`],
    ['=HYPERLINK("x","y")', `"'=HYPERLINK(""x"",""y"")"`],
    // Numbers are numbers: a negative one is not a formula.
    ['-12', '-12'],
    ['-1.5', '-1.5'],
    ['1000', '1000'],
  ])('writes %j as %j', (value, cell) => {
    expect(csvCell(value)).toBe(cell);
  });

  it('ends each record with CRLF', () => {
    expect(csvLine(['a', null, 'b,c'])).toBe('a,,"b,c"\r\n');
  });
});
