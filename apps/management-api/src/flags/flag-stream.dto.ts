import { ApiProperty } from '@nestjs/swagger';
import { FlagDefinitionDto } from './flag-targeting.dto';

/** The data of a flag-data stream's `put` (every flag of the environment) and `patch` (the flags that changed). */
export class FlagStreamFlagsDto {
  @ApiProperty({ type: [FlagDefinitionDto], description: "flag definitions in the evaluator's form (libs/flag-evaluation's FlagDefinition)" })
  flags: FlagDefinitionDto[];
}

/** The data of a flag-data stream's `delete`: flags removed from the environment. */
export class FlagStreamDeleteDto {
  @ApiProperty({ type: [String] }) keys: string[];
}
