import type { FastifySchema } from 'fastify';

/**
 * A route's success answers for its OpenAPI document (and so docs/api-reference.md), where they are not the
 * default 200. Only the document sees this: Fastify serialises the reply exactly as before, because a response
 * schema given to the route itself would make it drop every field the schema does not name.
 */
export function answers(codes: Record<number, string>): { swaggerTransform: (route: { schema: FastifySchema; url: string }) => { schema: FastifySchema; url: string } } {
  const response = Object.fromEntries(Object.entries(codes).map(([code, description]) => [code, { description, type: 'object' }]));
  return { swaggerTransform: ({ schema, url }) => ({ schema: { ...schema, response }, url }) };
}

export const ACCEPTED = 'Accepted: the host workflow took the request and runs the operation; read the host to follow it';
