/* A deliberately broken "lock" (no exclusion at all): the torture test must
 * catch it, or it proves nothing. */
#include <pthread.h>

int pthread_mutex_lock(pthread_mutex_t *mutex)
{
	(void)mutex;
	return 0;
}

int pthread_mutex_unlock(pthread_mutex_t *mutex)
{
	(void)mutex;
	return 0;
}
