#define LFS_OFF_T off_t
#define LFS_FOPEN fopen
#define LFS_FTELL ftello
#define LFS_FSEEK fseeko
#define LFS_PRId PRIdMAX
#define PRIdOFF_T LFS_PRId
