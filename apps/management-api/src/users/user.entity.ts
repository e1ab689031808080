import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

@Entity({ name: 'users' })
export class UserEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  /** `sub` of the identity provider's ID token; `pending:<email>` for an invited user who has not signed in yet. */
  @Column({ name: 'idp_subject', type: 'text' })
  idpSubject: string;

  @Column({ type: 'text' })
  email: string;

  @Column({ name: 'display_name', type: 'text', default: '' })
  displayName: string;

  @Column({ name: 'sign_in_provider', type: 'text', nullable: true })
  signInProvider: string | null;

  @Column({ name: 'last_accessed_at', type: 'timestamptz', nullable: true })
  lastAccessedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}

export const pendingSubject = (email: string): string => `pending:${email.toLowerCase()}`;
/** A user added by e-mail who has not signed in yet. */
export const isPendingUser = (u: Pick<UserEntity, 'idpSubject' | 'email'>): boolean => u.idpSubject === pendingSubject(u.email);
