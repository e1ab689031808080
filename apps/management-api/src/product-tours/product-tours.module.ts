import { Module } from '@nestjs/common';
import { ProductToursController } from './product-tours.controller';
import { ProductToursRepository } from './product-tours.repository';
import { ProductToursService } from './product-tours.service';

@Module({ controllers: [ProductToursController], providers: [ProductToursRepository, ProductToursService] })
export class ProductToursModule {}
