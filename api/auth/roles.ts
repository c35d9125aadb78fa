/**
 * Who may do what: a role per namespace (`*` for every namespace). Roles nest:
 * an operator may also view, an admin may also operate.
 */
export type Role = 'viewer' | 'operator' | 'admin';
/** What a route needs: view (GET), operate (image, reboot, power-off requests, paused), admin (hosts, credentials). */
export type Action = 'view' | 'operate' | 'admin';

export interface Grant {
  role: Role;
  namespace: string;
}

export interface Principal {
  subject: string;
  grants: Grant[];
  /** How the caller proved who it is; the audit log records it. */
  via: 'token' | 'kubernetes' | 'certificate' | 'none';
}

const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };
const NEEDS: Record<Action, number> = { view: 1, operate: 2, admin: 3 };
const ROLES = Object.keys(RANK) as Role[];

export function allows(p: Principal, action: Action, namespace: string): boolean {
  return p.grants.some((g) => (g.namespace === '*' || g.namespace === namespace) && RANK[g.role] >= NEEDS[action]);
}

/** The least role that may do `action`, for 403 messages. */
export function roleFor(action: Action): Role {
  return ROLES.find((r) => RANK[r] === NEEDS[action]) ?? 'admin';
}

/** `operator:lab,viewer:*` → grants; throws naming `where` and what is accepted. */
export function parseGrants(text: string, where: string): Grant[] {
  return text.split(',').map((item) => {
    const [role, namespace, extra] = item.trim().split(':');
    if (!ROLES.includes(role as Role) || !namespace || extra !== undefined) {
      throw new Error(`${where}: "${item.trim()}" is not a grant; expected role:namespace with role one of ${ROLES.join(', ')} and namespace a name or *`);
    }
    return { role: role as Role, namespace };
  });
}
