import { renderString, TemplateError } from './helm-render';

/** Each case: a template, the root context, and what Helm prints for it. */
const render = (t: string, root: Record<string, unknown> = {}) => renderString(t, root);

describe('helm-render: the Go template subset the chart uses', () => {
  it('trims whitespace on the side of {{- and -}}, and drops comments', () => {
    expect(render('a  \n  {{- "b" -}}  \n  c')).toBe('abc');
    expect(render('a {{/* note */}}b{{- /* trimmed */ -}} c')).toBe('a bc');
  });

  it('reads fields of maps; a missing key is empty, a field of a missing key is an error', () => {
    expect(render('{{ .Values.a.b }}|{{ .Values.x }}|', { Values: { a: { b: 3 } } })).toBe('3||');
    expect(() => render('{{ .Values.x.y }}', { Values: {} })).toThrow(/nil pointer evaluating \.Values\.x\.y/);
  });

  it('if / else if / else with Go truth (0, "", empty lists and maps are false)', () => {
    const t = '{{ if .a }}A{{ else if .b }}B{{ else }}C{{ end }}';
    expect([render(t, { a: 1 }), render(t, { a: 0, b: 'x' }), render(t, { a: [], b: {} })]).toEqual(['A', 'B', 'C']);
  });

  it('range over lists (index, value) and maps (sorted keys), with else when empty', () => {
    expect(render('{{ range $i, $v := .l }}{{ $i }}={{ $v }};{{ end }}', { l: ['x', 'y'] })).toBe('0=x;1=y;');
    expect(render('{{ range $k, $v := .m }}{{ $k }}={{ . }};{{ end }}', { m: { b: 2, a: 1 } })).toBe('a=1;b=2;');
    expect(render('{{ range .l }}x{{ else }}none{{ end }}', { l: [] })).toBe('none');
  });

  it('with moves the dot; $ stays the root', () => {
    expect(render('{{ with .a }}{{ .b }}{{ $.c }}{{ end }}', { a: { b: 1 }, c: 2 })).toBe('12');
  });

  it('variables: := declares in the block, = assigns the outer one', () => {
    expect(render('{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ $y := 3 }}{{ end }}{{ $x }}', {})).toBe('2');
    expect(() => render('{{ if true }}{{ $y := 3 }}{{ end }}{{ $y }}')).toThrow(/undefined variable \$y/);
  });

  it('define and include, pipelines and parentheses', () => {
    const t = '{{- define "l" -}}a: {{ .x }}\nb: 2{{- end -}}\nm:\n  {{- include "l" (dict "x" 1) | nindent 2 }}';
    expect(render(t)).toBe('m:\n  a: 1\n  b: 2');
    expect(render('{{ printf "%s-%d" "a" 7 | quote }}')).toBe('"a-7"');
  });

  it('the Sprig functions behave as Helm\'s', () => {
    expect(render('{{ default "d" .x }}|{{ default "d" "v" }}|{{ default 5 0 }}', {})).toBe('d|v|5');
    expect(render('{{ "abcdef-" | trunc 6 | trimSuffix "-" }}|{{ add 1 2 3 }}|{{ div 10999 1000 }}')).toBe('abcdef|6|10');
    expect(render('{{ max 3 "12" 7 }}|{{ int (add "300000" 10000) }}')).toBe('12|310000');
    expect(render('{{ toYaml .m }}', { m: { b: [1], a: 'x' } })).toBe('a: x\nb:\n  - 1');
    expect(render('{{ .m | toJson }}', { m: { a: 1 } })).toBe('{"a":1}');
    expect(render('{{ eq .a "x" }} {{ and 1 0 }} {{ or 0 "y" }} {{ not "" }}', { a: 'x' })).toBe('true 0 y true');
    expect(render('{{ "a" | sha256sum }}')).toBe('ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb');
  });

  it('fails on fail and required, and on anything outside the subset instead of guessing', () => {
    expect(() => render('{{ fail "no" }}')).toThrow(TemplateError);
    expect(() => render('{{ required "x needed" .x }}', {})).toThrow('x needed');
    expect(() => render('{{ tpl "x" . }}')).toThrow(/function "tpl" is outside the supported subset/);
    expect(() => render('{{ block "x" . }}{{ end }}')).toThrow(/outside the supported subset/);
    expect(() => render('{{ if .a }}x')).toThrow(/missing \{\{end\}\}/);
  });
});
