/** A Kubernetes Event about a host, as the workflows decide it and the status writer or controller records it. */
export interface HostEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}
