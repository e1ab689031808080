import 'reflect-metadata';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsBoolean, IsInt, IsObject, IsOptional, IsString, MaxLength, ValidateNested } from 'class-validator';
import { bodyValidator, plainBodyAcceptor, StrictValidationPipe } from './validation';

/** As the apps' DTOs are declared: the OpenAPI metadata says what may be null (nothing here). */
class Plain {
  @ApiProperty() @IsString() @MaxLength(8) name: string;
  @ApiPropertyOptional() @IsOptional() @IsBoolean() on?: boolean;
  @ApiPropertyOptional() @IsOptional() @IsObject() meta?: Record<string, unknown>;
}

class WithDefault {
  @IsOptional() @IsString() mode?: string = 'fast';
}

class WithInt {
  @IsInt() n: number;
}

class Child {
  @IsString() id: string;
}

class WithNested {
  @ValidateNested() @Type(() => Child) child: Child;
}

const pipe = new StrictValidationPipe();
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
const viaPipe = (metatype: Function, body: unknown): Promise<string> =>
  pipe.transform(body, { type: 'body', metatype: metatype as never, data: undefined }).then(
    (v) => JSON.stringify({ ...(v as object) }),
    () => 'refused',
  );

/** Bodies as JSON text, parsed as the lean routes parse them. */
const TAKEN = ['{"name":"a"}', '{"name":"12345678","on":false}', '{"name":"😀😀😀😀","meta":{"a":[1,null,{"b":"c"}]}}'];
const LEFT_TO_THE_PIPE = [
  '{}',
  '{"name":1}',
  '{"name":"123456789"}',
  '{"name":"a","extra":1}',
  '{"name":"a","on":null}',
  '{"name":"a","on":"yes"}',
  '{"name":"a","meta":[1]}',
  '{"name":"a\\u0000"}',
  '{"name":"a","meta":{"k":"\\ud800"}}',
  '{"name":"a","meta":{"__proto__":{"admin":true}}}',
  '{"name":"a","meta":{"x":{"constructor":1}}}',
  '[]',
];

describe('plainBodyAcceptor: a DTO body without the pipe, only where the pipe would hand it over as it is', () => {
  const accept = plainBodyAcceptor(Plain);

  it.each(TAKEN)('takes %s exactly as the pipe hands it over', async (text) => {
    const taken = accept(JSON.parse(text));
    expect(taken).toEqual(JSON.parse(text));
    expect(await viaPipe(Plain, JSON.parse(text))).toBe(JSON.stringify(JSON.parse(text)));
  });

  it.each(LEFT_TO_THE_PIPE)('leaves %s to the pipe, which refuses or changes it', async (text) => {
    expect(accept(JSON.parse(text))).toBeUndefined();
    const piped = await viaPipe(Plain, JSON.parse(text));
    expect(piped === 'refused' || piped !== JSON.stringify(JSON.parse(text))).toBe(true);
  });

  it('never decides for a DTO with a default value, a rule it cannot check plainly, or a nested DTO', async () => {
    expect(plainBodyAcceptor(WithDefault)({})).toBeUndefined();
    expect(await viaPipe(WithDefault, {})).toBe('{"mode":"fast"}');
    expect(plainBodyAcceptor(WithInt)({ n: 1 })).toBeUndefined();
    expect(plainBodyAcceptor(WithNested)({ child: { id: 'x' } })).toBeUndefined();
  });

  it('takes a free-form object body of safe text as it is; anything else goes to the pipe', () => {
    const free = plainBodyAcceptor(Object);
    const body = { key: 'u', nested: { list: [1, 'two', null] } };
    expect(free(body)).toBe(body);
    expect([free([1]), free('x'), free(null), free({ k: 'a\u0000' })]).toEqual([undefined, undefined, undefined, undefined]);
  });
});

describe('bodyValidator', () => {
  it("answers the plain body at once and leaves the rest to the pipe's 422", async () => {
    const validate = bodyValidator(Plain);
    const body = { name: 'a' };
    expect(validate(body)).toBe(body);
    await expect(validate({ name: 'a', extra: 1 })).rejects.toMatchObject({ problem: { status: 422 }, extensions: { errors: { extra: 'is not an allowed field' } } });
    await expect(bodyValidator(Object)(undefined)).rejects.toMatchObject({ extensions: { errors: { body: 'must be a JSON object' } } });
  });
});
