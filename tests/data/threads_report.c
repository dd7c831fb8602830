/* Starts N threads that wait a moment (so a placement daemon can see them),
 * then print the CPUs each is allowed on, read back from /proc. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *worker(void *arg)
{
	char path[64], line[256];
	long k = (long)arg;
	FILE *f;

	usleep(400000);
	snprintf(path, sizeof(path), "/proc/self/task/%ld/status", (long)syscall(SYS_gettid));
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Cpus_allowed_list:", 18))
			printf("thread %ld allowed %s", k, line + 19);
	if (f)
		fclose(f);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t t[64];

	for (long i = 0; i < n && i < 64; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < n && i < 64; i++)
		pthread_join(t[i], NULL);
	printf("value=%d\n", n);
	return 0;
}
